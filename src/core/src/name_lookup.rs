//! Name lookups that may hang, bounded: `getaddrinfo` has no time-out, so the machine id's worker
//! looks an endpoint's host up in a thread of its own and waits for it only until its step's
//! deadline. A lookup that hangs is waited for again at the next step, never started again while
//! it runs: one outstanding lookup per name, however long the resolver hangs (before, each step
//! started one more thread, and a resolver that hung for an hour left hundreds behind).
//! The shell starts the threads (with every signal blocked) and gives the resolver.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Instant;

/// A lookup's result: its addresses, or why none.
pub type Found<A> = Result<Vec<A>, String>;

/// The lookups under way, by name.
pub struct Lookups<A> {
    pending: HashMap<String, (Instant, Receiver<Found<A>>)>,
}

impl<A> Default for Lookups<A> {
    fn default() -> Lookups<A> {
        Lookups { pending: HashMap::new() }
    }
}

impl<A: Send + 'static> Lookups<A> {
    /// The addresses of `name`, waited for until `deadline`: from the lookup under way for it if
    /// there is one, else from a new one, which `start` runs in a thread of its own (`resolve`
    /// gives the addresses). A lookup not done by the deadline stays under way for the next call.
    pub fn get(
        &mut self,
        name: &str,
        deadline: Instant,
        start: impl FnOnce(Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()>,
        resolve: fn(&str) -> Found<A>,
    ) -> Found<A> {
        if !self.pending.contains_key(name) {
            let (tx, rx) = mpsc::channel();
            let owned = name.to_string();
            start(Box::new(move || {
                let _ = tx.send(resolve(&owned));
            }))
            .map_err(|e| format!("cannot look up {name}: {e}"))?;
            self.pending.insert(name.to_string(), (Instant::now(), rx));
        }
        let (since, rx) = &self.pending[name];
        let wait = deadline.saturating_duration_since(Instant::now());
        let result = match rx.recv_timeout(wait) {
            Ok(found) => found,
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "no address for {name} within {} ms: the name lookup hangs (under way for {} ms; waited for again, not started again)",
                    wait.as_millis(),
                    since.elapsed().as_millis()
                ))
            }
            Err(RecvTimeoutError::Disconnected) => Err(format!("the lookup of {name} ended without an answer")),
        };
        self.pending.remove(name);
        result
    }

    /// How many lookups are under way.
    pub fn under_way(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Mutex;
    use std::time::Duration;

    static STARTED: AtomicUsize = AtomicUsize::new(0);
    static GATE: Mutex<()> = Mutex::new(());

    /// A resolver that hangs while the test holds the gate.
    fn hanging(name: &str) -> Found<u16> {
        let _open = GATE.lock().unwrap();
        if name == "etcd-1" {
            Ok(vec![2379])
        } else {
            Err(format!("{name}: no such host"))
        }
    }

    fn start(job: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        STARTED.fetch_add(1, SeqCst);
        std::thread::spawn(job);
        Ok(())
    }

    /// Issue 56, item 6(b): a lookup that hangs is one thread, however many steps wait for it.
    #[test]
    fn a_lookup_that_hangs_is_waited_for_again_never_started_again() {
        let mut lookups = Lookups::default();
        let gate = GATE.lock().unwrap();
        for _ in 0..20 {
            let soon = Instant::now() + Duration::from_millis(5);
            let e = lookups.get("etcd-1", soon, start, hanging).unwrap_err();
            assert!(e.contains("the name lookup hangs"), "{e}");
        }
        assert_eq!((STARTED.load(SeqCst), lookups.under_way()), (1, 1), "one thread for twenty steps");
        drop(gate);
        let later = Instant::now() + Duration::from_secs(10);
        assert_eq!(lookups.get("etcd-1", later, start, hanging), Ok(vec![2379]));
        assert_eq!((STARTED.load(SeqCst), lookups.under_way()), (1, 0));
        // Done: the next lookup is a new one; an error is an answer too.
        assert!(lookups.get("nosuch", later, start, hanging).unwrap_err().contains("no such host"));
        assert_eq!((STARTED.load(SeqCst), lookups.under_way()), (2, 0));
        // A thread that cannot be started is said.
        let refused = |_: Box<dyn FnOnce() + Send>| Err(std::io::Error::other("too many threads"));
        assert!(lookups.get("etcd-1", later, refused, hanging).unwrap_err().contains("too many threads"));
    }
}
