//! Gives freed heap back to the operating system after a large build.
//!
//! Loading or importing a big zone allocates and frees several times the final data (rows,
//! parsed records, the previous snapshot). glibc keeps freed chunks in its arenas, so without
//! this a server that loaded a million records from SQLite stayed at about three times the
//! memory it uses.
#![allow(unsafe_code)]

/// Keeps glibc's threshold for serving an allocation by its own mapping fixed at 256 KiB. By
/// default freeing a mapped block raises the threshold to its size (up to 32 MiB), after which
/// a snapshot's big arrays come from the arenas, where a live neighbour can pin freed pages; as
/// mappings they go back to the kernel when freed. Called once at start.
pub fn map_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes a tuning value of glibc's allocator.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

/// Trims glibc's free lists, after `freeing` (a `drop_later` task) has finished; a no-op
/// elsewhere. Runs off the async threads (it walks every arena).
pub async fn release_free_memory(freeing: Option<tokio::task::JoinHandle<()>>) {
    if let Some(freeing) = freeing {
        let _ = freeing.await;
    }
    let _ = tokio::task::spawn_blocking(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim takes no pointer and only returns unused pages of glibc's own
        // arenas to the kernel.
        unsafe {
            libc::malloc_trim(0);
        }
    })
    .await;
}

/// Drops a replaced snapshot on a blocking thread: freeing a zone of a million names takes
/// about a tenth of a second, which should not land on an API request or a UDP worker. A worker
/// still answering its batch from the old snapshot holds a reference (the swap turned its
/// borrow into one), so this waits, up to a second, to hold the last one.
pub fn drop_later<T: Send + Sync + 'static>(
    value: std::sync::Arc<T>,
) -> Option<tokio::task::JoinHandle<()>> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => Some(handle.spawn_blocking(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
            while std::sync::Arc::strong_count(&value) > 1 && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            drop(value)
        })),
        Err(_) => {
            drop(value);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::thread::ThreadId;

    struct Probe(Arc<Mutex<Option<ThreadId>>>);

    impl Drop for Probe {
        fn drop(&mut self) {
            *self.0.lock().unwrap() = Some(std::thread::current().id());
        }
    }

    /// A UDP worker that still holds the replaced snapshot and lets go after the swap must not
    /// be the one that frees it.
    #[tokio::test(flavor = "current_thread")]
    async fn a_holder_that_lets_go_last_does_not_free() {
        let dropped_on = Arc::new(Mutex::new(None));
        let replaced = Arc::new(Probe(dropped_on.clone()));
        let held_by_worker = replaced.clone();
        let freeing = super::drop_later(replaced).expect("inside a runtime");
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        assert!(
            dropped_on.lock().unwrap().is_none(),
            "freed while still held"
        );
        drop(held_by_worker);
        freeing.await.unwrap();
        let freed_on = dropped_on.lock().unwrap().expect("freed");
        assert_ne!(freed_on, std::thread::current().id(), "the holder freed it");
    }
}
