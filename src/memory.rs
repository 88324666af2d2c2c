//! Giving memory back to the operating system after bursts.
//!
//! With glibc's allocator a process keeps what it once used: large buffers
//! (request bodies, answers) move the mmap threshold up until they land in
//! the heap, and freed heap pages stay mapped. After a burst of large
//! requests engram would sit at its peak for good. So large allocations are
//! always mapped on their own (and unmapped when freed), and free heap
//! memory is handed back on a timer. Elsewhere this does nothing.

use std::time::Duration;

/// Allocations at least this large get their own mapping.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: libc::c_int = 1024 * 1024;

/// How often free heap memory is returned.
const TRIM_EVERY: Duration = Duration::from_secs(10);

/// Sets the allocator up; call once at start-up, before threads start.
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; called before the
    // other threads exist.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
    }
}

/// Returns free heap memory to the system every [`TRIM_EVERY`], on a
/// blocking thread (a trim of a large heap takes milliseconds).
pub fn spawn_trimmer() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    actix_web::rt::spawn(async {
        let mut ticks = actix_web::rt::time::interval(TRIM_EVERY);
        loop {
            ticks.tick().await;
            // SAFETY: malloc_trim is thread-safe and only releases memory
            // the allocator holds free.
            let _ = actix_web::rt::task::spawn_blocking(|| unsafe { libc::malloc_trim(0) }).await;
        }
    });
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = TRIM_EVERY;
}
