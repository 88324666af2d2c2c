//! Whether a request's client still waits for its answer. actix-web goes
//! on with a request whose client closed the connection (it learns of it
//! only when it writes the answer), so a heavy read abandoned by its
//! client would hold a reading thread to its deadline. Here the reads of a
//! request ask the connection's socket, now and then, whether the client
//! has closed it (see `store::budget`), and stop when it has.
//!
//! A client that closes only its sending side while it waits (TCP allows
//! it; HTTP clients do not do it) looks gone too; its read then stops and
//! it gets no answer. Over TLS or HTTP/2, bytes still unread on the socket
//! hide the close, and such a read stops at its deadline instead.

use std::any::Any;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::body::MessageBody;
use actix_web::dev::{Extensions, ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::rt::net::TcpStream;

use crate::store::budget::{self, Waiter, Waiting};

/// Runs `request` with `waiter` telling its reads whether its client still
/// waits.
async fn watched<F: std::future::Future>(waiter: Waiter, request: F) -> F::Output {
    budget::WAITER.scope(waiter, request).await
}

/// Whether the client of the request this task works for has closed its
/// connection (false where nothing watches it).
pub fn client_gone() -> bool {
    budget::waiter().is_some_and(|waiter| waiter.gone())
}

/// The socket of a connection, as `on_connect` found it.
#[derive(Debug, Clone, Copy)]
struct ClientSocket(RawFd);

/// For `HttpServer::on_connect`: keeps the connection's socket with it.
pub fn on_connect(connection: &dyn Any, data: &mut Extensions) {
    type Tls = actix_tls::accept::rustls_0_23::TlsStream<TcpStream>;
    let fd = if let Some(tcp) = connection.downcast_ref::<TcpStream>() {
        tcp.as_raw_fd()
    } else if let Some(tls) = connection.downcast_ref::<Tls>() {
        tls.get_ref().0.as_raw_fd()
    } else {
        return;
    };
    data.insert(ClientSocket(fd));
}

/// How often a read asks the socket: a system call each time.
const ASK_EVERY: Duration = Duration::from_millis(20);

/// Whether the client of one request has closed its connection.
struct SocketWaiter {
    fd: RawFd,
    started: Instant,
    /// Milliseconds after `started` of the last look.
    asked_at: AtomicU64,
    gone: AtomicBool,
}

impl Waiting for SocketWaiter {
    fn gone(&self) -> bool {
        if self.gone.load(Ordering::Relaxed) {
            return true;
        }
        let now = self.started.elapsed().as_millis() as u64;
        let last = self.asked_at.load(Ordering::Relaxed);
        if now < last + ASK_EVERY.as_millis() as u64
            || self
                .asked_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        let gone = closed(self.fd);
        if gone {
            self.gone.store(true, Ordering::Relaxed);
        }
        gone
    }
}

/// Whether the peer of socket `fd` has closed it: a look at what waits to
/// be read, taking nothing. The socket belongs to a connection still open
/// (its request is unanswered); should it have been closed meanwhile, its
/// number may name another socket, and the worst that can follow is that
/// a read nobody waits for stops early.
fn closed(fd: RawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: `recv` writes at most one byte into `byte`, which lives for
    // the call; a bad descriptor is an error, not undefined behaviour.
    let read = unsafe {
        libc::recv(
            fd,
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    match read {
        0 => true,
        n if n > 0 => false,
        _ => {
            let error = std::io::Error::last_os_error();
            !matches!(error.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR))
        }
    }
}

/// Runs the request with a [`Waiter`] of its connection's socket, for the
/// reads it makes.
pub async fn watch(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let Some(ClientSocket(fd)) = req.conn_data::<ClientSocket>().copied() else {
        return next.call(req).await;
    };
    let waiter: Waiter = Arc::new(SocketWaiter {
        fd,
        started: Instant::now(),
        asked_at: AtomicU64::new(0),
        gone: AtomicBool::new(false),
    });
    watched(waiter, next.call(req)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_socket_is_closed_once_its_peer_closed_it_and_not_before() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        server.set_nonblocking(true).unwrap();
        assert!(!closed(server.as_raw_fd()), "nothing sent yet");
        client.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(!closed(server.as_raw_fd()), "bytes wait to be read");
        drop(client);
        std::thread::sleep(Duration::from_millis(20));
        // The unread bytes still come first.
        assert!(!closed(server.as_raw_fd()));
        let mut rest = Vec::new();
        let _ = std::io::Read::read_to_end(&mut &server, &mut rest);
        assert!(closed(server.as_raw_fd()), "the peer closed it");
    }
}
