# Build stage: compile the release binary (SQLite is bundled, so no system
# libraries are needed at run time beyond libc).
FROM rust:1-slim-bookworm AS build
WORKDIR /src
# Dependencies first, against placeholder sources: this layer is rebuilt
# only when the manifests or the lock file change, not on every source edit.
COPY Cargo.toml Cargo.lock ./
# Build options of the bundled SQLite (see the file), and the SQLite it
# builds (vendor/README.md).
COPY .cargo ./.cargo
COPY vendor ./vendor
# A workspace member; its manifest must be there for the workspace to load.
COPY loadtests/Cargo.toml ./loadtests/Cargo.toml
RUN mkdir -p src loadtests/src \
    && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs \
    && echo 'fn main() {}' > loadtests/src/main.rs \
    && cargo build --release --locked -p engram --bin engram \
    && rm -rf src loadtests/src \
        target/release/.fingerprint/engram-* \
        target/release/deps/engram-* target/release/deps/libengram-*
# Then engram itself.
COPY src ./src
COPY config ./config
COPY migrations ./migrations
COPY loadtests ./loadtests
RUN cargo build --release --locked -p engram --bin engram

# Runtime stage: a slim image with the binary, its config, and a volume for
# the database, run as an unprivileged user.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/engram engram \
    && mkdir -p /var/lib/engram /etc/engram \
    && chown engram /var/lib/engram
COPY --from=build /src/target/release/engram /usr/local/bin/engram
COPY config/default.toml /etc/engram/default.toml
ENV ENGRAM_CONFIG=/etc/engram/default.toml \
    ENGRAM_LISTEN=0.0.0.0:8080 \
    ENGRAM_DB_PATH=/var/lib/engram/engram.db
VOLUME ["/var/lib/engram"]
USER engram
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/engram"]
CMD ["serve"]
