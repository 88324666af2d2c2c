//! `engram [serve] [--config PATH]` runs the service; `engram jobs …`
//! controls the maintenance jobs of a running one; `engram keys …` makes
//! and revokes API keys; `engram erase` erases records for good; `engram
//! backup` copies the database; `engram migrate` moves a SQLite database to
//! PostgreSQL.

use std::path::PathBuf;
use std::process::ExitCode;

use engram::cli;
use engram::clock::Clock;
use engram::config::Settings;
use engram::startup::Application;

const USAGE: &str = "\
engram: a shared memory service for AI agents

Usage:
  engram [serve] [--config PATH]   run the service (the default)
  engram jobs list|set|run ...     see or change the maintenance jobs of a
                                   running service (engram jobs --help)
  engram keys create|list|revoke   make, list or revoke API keys
                                   (engram keys --help)
  engram erase --scope|--source|--subject|--ids ... --rationale TEXT
                                   erase records for good (engram erase --help)
  engram backup PATH               copy the database, while it serves
                                   (engram backup --help)
  engram migrate --from sqlite:PATH --to postgres://...
                                   move a SQLite database to PostgreSQL
                                   (engram migrate --help)
  engram --help                    show this help
  engram --version                 show the version

Configuration: the embedded defaults (config/default.toml), then the file
given by --config or ENGRAM_CONFIG, then ENGRAM_LISTEN, ENGRAM_DB_PATH and
ENGRAM_<SECTION>__<KEY> environment variables.";

enum Command {
    Serve { config: Option<PathBuf> },
    Jobs(Vec<String>),
    Keys(Vec<String>),
    Erase(Vec<String>),
    Backup(Vec<String>),
    Migrate(Vec<String>),
    Help,
    Version,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Command, String> {
    let mut config = None;
    let mut args = args.peekable();
    match args.peek().map(String::as_str) {
        Some("serve") => {
            args.next();
        }
        Some("jobs") => {
            args.next();
            return Ok(Command::Jobs(args.collect()));
        }
        Some("keys") => {
            args.next();
            return Ok(Command::Keys(args.collect()));
        }
        Some("erase") => {
            args.next();
            return Ok(Command::Erase(args.collect()));
        }
        Some("backup") => {
            args.next();
            return Ok(Command::Backup(args.collect()));
        }
        Some("migrate") => {
            args.next();
            return Ok(Command::Migrate(args.collect()));
        }
        _ => {}
    }
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" | "help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            "-c" | "--config" => {
                let path = args.next().ok_or("--config needs a file path")?;
                config = Some(PathBuf::from(path));
            }
            other => {
                if let Some(path) = other.strip_prefix("--config=") {
                    config = Some(PathBuf::from(path));
                } else {
                    return Err(format!("unknown argument {other:?}"));
                }
            }
        }
    }
    Ok(Command::Serve { config })
}

fn main() -> ExitCode {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Version) => {
            println!("engram {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Ok(Command::Serve { config }) => config,
        Ok(Command::Jobs(args)) => return jobs(&args),
        Ok(Command::Keys(args)) => return keys(&args),
        Ok(Command::Erase(args)) => {
            return on_database(
                "engram erase",
                &args,
                cli::erase::ERASE_USAGE,
                cli::erase::parse_erase,
                cli::erase::run_erase,
            )
        }
        Ok(Command::Backup(args)) => return backup(&args),
        Ok(Command::Migrate(args)) => return migrate(&args),
        Err(message) => {
            eprintln!("engram: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let settings = match Settings::load(config) {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("engram: {e}");
            return ExitCode::from(2);
        }
    };
    engram::telemetry::init(settings.server.log_format, &settings.telemetry);
    engram::memory::configure();
    let served = actix_web::rt::System::new().block_on(async move {
        let app = Application::build(settings, Clock::system()).await?;
        engram::memory::spawn_trimmer();
        app.run_until_stopped().await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    });
    // The last requests' spans, before the process ends.
    engram::telemetry::otlp::flush(std::time::Duration::from_secs(2));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "engram stopped");
            eprintln!("engram: {e}");
            ExitCode::FAILURE
        }
    }
}

fn jobs(args: &[String]) -> ExitCode {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{}", cli::JOBS_USAGE);
        return ExitCode::SUCCESS;
    }
    let (command, service) = match cli::parse_jobs(args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("engram jobs: {message}\n\n{}", cli::JOBS_USAGE);
            return ExitCode::from(2);
        }
    };
    match actix_web::rt::System::new().block_on(cli::run_jobs(command, &service)) {
        Ok(output) => {
            print!("{output}");
            if !output.ends_with('\n') {
                println!();
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("engram jobs: {message}");
            ExitCode::FAILURE
        }
    }
}

fn keys(args: &[String]) -> ExitCode {
    on_database(
        "engram keys",
        args,
        cli::keys::KEYS_USAGE,
        cli::keys::parse_keys,
        cli::keys::run_keys,
    )
}

fn backup(args: &[String]) -> ExitCode {
    on_database(
        "engram backup",
        args,
        cli::backup::BACKUP_USAGE,
        cli::backup::parse_backup,
        |destination, settings| cli::backup::run_backup(&destination, settings),
    )
}

fn migrate(args: &[String]) -> ExitCode {
    on_database(
        "engram migrate",
        args,
        cli::migrate::MIGRATE_USAGE,
        cli::migrate::parse_migrate,
        cli::migrate::run_migrate,
    )
}

/// A command on the service's database itself: its help, its arguments
/// (and `--config`), the settings as `engram serve` loads them, then the
/// command; exit 2 for a usage or configuration error, 1 when it fails.
fn on_database<C>(
    name: &str,
    args: &[String],
    usage: &str,
    parse: impl FnOnce(&[String]) -> Result<(C, Option<PathBuf>), String>,
    run: impl FnOnce(C, &Settings) -> Result<String, String>,
) -> ExitCode {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{usage}");
        return ExitCode::SUCCESS;
    }
    let (command, config) = match parse(args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("{name}: {message}\n\n{usage}");
            return ExitCode::from(2);
        }
    };
    let settings = match Settings::load(config) {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::from(2);
        }
    };
    match run(command, &settings) {
        Ok(output) => {
            print!("{output}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{name}: {message}");
            ExitCode::FAILURE
        }
    }
}
