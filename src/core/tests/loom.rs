//! The model check of the shared-memory protocol with loom: the very code of `state`,
//! `generator` and `mark_writer`, built over loom's atomics, run under every interleaving of two
//! or three threads (loom's memory model: a Relaxed load may see any store not ordered before it).
//!
//! RUSTFLAGS="--cfg loom" cargo test -p pg_snowflake_core --release --test loom
//! (The static checks of the test suite, checks.sh, run it in a target directory of its own.)
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use loom::sync::Arc;
use loom::thread;
use pg_snowflake_core::error::Error;
use pg_snowflake_core::generator::{Generator, GrantCheck};
use pg_snowflake_core::host::{Clock, Events, Limits, MarkStore, Processes, Settings};
use pg_snowflake_core::lease::{self, Cover};
use pg_snowflake_core::mark_writer::{self, MarkWriter, Taken};
use pg_snowflake_core::state::SharedState;
use pg_snowflake_core::Layout;

const EPOCH: i64 = 1_735_689_600_000;

/// Every interleaving with up to three preemptions (loom's advice for CI: bounded preemption
/// finds nearly all bugs at a tiny share of the cost); LOOM_MAX_PREEMPTIONS overrides it.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}
/// Two sequence bits: a tick holds four ids, so that the threads also meet a used-up tick.
fn layout() -> Layout {
    Layout::new(EPOCH, 1, 10, 2).unwrap()
}

/// A state whose durable mark covers ticks up to `mark_tick`, nothing issued yet.
fn state(mark_tick: i64) -> SharedState {
    let s = SharedState::starting_at(None, layout().sequence_bits(), EPOCH);
    s.raise_to_mark(mark_tick, EPOCH + mark_tick, layout().sequence_bits());
    // raise_to_mark takes the ticks up to the mark as used: start from nothing issued again.
    s.hot.state.store(0, Relaxed);
    s
}

#[test]
fn backends_racing_on_the_state_word_never_issue_an_id_twice() {
    model(|| {
        let shared = Arc::new(state(10));
        let g = Generator::new(layout(), 3).unwrap();
        // Two backends on one tick, three calls each: the tick's four ids, then a used-up tick.
        let handles: Vec<_> = [5_i64, 5]
            .into_iter()
            .map(|tick| {
                let shared = shared.clone();
                thread::spawn(move || {
                    (0..3).filter_map(|_| g.try_issue(&shared, EPOCH + tick).ok().map(|(id, _)| id)).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut ids: Vec<i64> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
        let issued = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), issued, "an id was issued twice");
        // No update lost: the word holds the largest id's tick and sequence.
        let word = shared.hot.state.load(Relaxed) as i64;
        let last = *ids.last().unwrap();
        assert_eq!(((word >> 2) - 1, word & 3), ((last >> 12), last & 3));
    });
}

#[test]
fn one_mark_writer_at_a_time() {
    model(|| {
        let shared = Arc::new(state(10));
        let inside = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = [4, 5]
            .into_iter()
            .map(|pid| {
                let (shared, inside) = (shared.clone(), inside.clone());
                thread::spawn(move || {
                    if let Taken::Mine { writer, from } = mark_writer::try_take(&shared, pid, |_| true) {
                        assert_eq!(from, None);
                        assert_eq!(inside.fetch_add(1, Relaxed), 0, "two writers at once");
                        inside.fetch_sub(1, Relaxed);
                        drop(writer);
                    }
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(shared.mark.writer.load(Relaxed), 0, "the flag is released");
    });
}

#[test]
fn a_flag_whose_holder_is_gone_is_taken_over_once() {
    model(|| {
        let shared = Arc::new(state(10));
        shared.mark.writer.store(13, Relaxed); // process 13 exited with FATAL while writing
        let inside = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = [4, 5]
            .into_iter()
            .map(|pid| {
                let (shared, inside) = (shared.clone(), inside.clone());
                thread::spawn(move || match mark_writer::try_take(&shared, pid, |p| p != 13) {
                    Taken::Mine { writer, from } => {
                        assert_eq!(inside.fetch_add(1, Relaxed), 0, "two writers at once");
                        inside.fetch_sub(1, Relaxed);
                        drop(writer);
                        from == Some(13)
                    }
                    Taken::Busy { pid: holder, .. } => {
                        assert!(holder == 4 || holder == 5, "busy with a gone holder");
                        false
                    }
                })
            })
            .collect();
        let takeovers = handles.into_iter().map(|h| h.join().unwrap()).filter(|&t| t).count();
        assert_eq!(takeovers, 1, "taken over exactly once");
        assert_eq!(shared.stats.writer_takeovers.load(Relaxed), 1);
        assert_eq!(shared.mark.writer.load(Relaxed), 0);
    });
}

#[test]
fn an_exit_callback_releases_only_its_own_flag() {
    model(|| {
        let shared = Arc::new(state(10));
        let Taken::Mine { writer, .. } = mark_writer::try_take(&shared, 3, |_| true) else { panic!("free") };
        let other = {
            let shared = shared.clone();
            thread::spawn(move || mark_writer::release_if_held_by(&shared, 5))
        };
        other.join().unwrap();
        assert_eq!(shared.mark.writer.load(Relaxed), 3);
        drop(writer);
        assert_eq!(shared.mark.writer.load(Relaxed), 0);
    });
}

/// A host whose mark write only says, in an atomic of its own, that the mark is durable.
struct Writer(Arc<AtomicBool>);
impl MarkStore for Writer {
    fn persist_mark(&mut self, _: i64, _: &MarkWriter) -> Result<(), Error> {
        self.0.store(true, Relaxed);
        Ok(())
    }
}
impl Processes for Writer {
    fn this_process(&mut self) -> i32 {
        9
    }
    fn process_exists(&mut self, _: i32) -> bool {
        true
    }
}
impl Events for Writer {
    fn clock_went_back(&mut self, _: i64) {}
}
impl Clock for Writer {
    fn now_ms(&mut self) -> i64 {
        EPOCH + 20
    }
    fn now_us(&mut self) -> i64 {
        (EPOCH + 20) * 1000
    }
    fn monotonic_us(&mut self) -> u64 {
        0
    }
}
impl Settings for Writer {
    fn limits(&mut self) -> Limits {
        Limits { max_clock_wait_ms: 1000, max_clock_jump_ms: 0, max_mark_wait_ms: 1000 }
    }
}

#[test]
fn an_id_past_the_old_mark_is_issued_only_once_its_mark_is_durable() {
    model(|| {
        let shared = Arc::new(state(10));
        let durable = Arc::new(AtomicBool::new(false));
        let writer = {
            let (shared, durable) = (shared.clone(), durable.clone());
            thread::spawn(move || {
                let mut host = Writer(durable);
                assert_eq!(lease::cover(&shared, &layout(), EPOCH + 20, &mut host), Ok(Cover::Done));
            })
        };
        let g = Generator::new(layout(), 3).unwrap();
        // Tick 20 lies past the old mark (10): only the new mark covers it.
        if let Ok((id, _)) = g.try_issue(&shared, EPOCH + 20) {
            assert!(durable.load(Relaxed), "id {id} issued under a mark not yet durable");
        }
        writer.join().unwrap();
    });
}

/// A backend racing the lease worker as it switches from one leased machine id to another (its
/// lease lost; the new id's recorded mark taken as used, then the new grant published): every id
/// under the old id carries a tick before the old grant's end, every id under the new one a tick
/// above the new id's recorded mark, and none repeats.
#[test]
fn a_switch_of_leased_machine_id_never_issues_outside_either_grant() {
    use pg_snowflake_core::state::grant;
    const OLD: i64 = 5;
    const NEW: i64 = 6;
    const OLD_UNTIL: i64 = 10;
    const NEW_MARK: i64 = 11;
    model(|| {
        let shared = Arc::new(state(100));
        let bits = layout().machine_bits();
        shared.hot.grant.publish(grant::held(OLD, OLD_UNTIL, bits));
        let g = Generator::new(layout(), 0).unwrap();
        let backend = {
            let shared = shared.clone();
            thread::spawn(move || {
                [8_i64, 12]
                    .into_iter()
                    .filter_map(|tick| g.try_issue(&shared, EPOCH + tick).ok().map(|(id, _)| id))
                    .collect::<Vec<_>>()
            })
        };
        // The worker: the old grant taken away, the new id's mark used up, the new grant.
        shared.hot.grant.publish(grant::NOBODY);
        shared.use_up_to(NEW_MARK, layout().sequence_bits());
        shared.hot.grant.publish(grant::held(NEW, 20, bits));
        let ids = backend.join().unwrap();
        let mut seen = std::collections::HashSet::new();
        for id in ids {
            assert!(seen.insert(id), "id {id} twice");
            let parts = layout().decode(id).unwrap();
            let tick = parts.unix_ms - EPOCH;
            match parts.machine_id {
                OLD => assert!(tick < OLD_UNTIL, "id {id} under the old id at tick {tick}"),
                NEW => assert!(tick > NEW_MARK, "id {id} under the new id at tick {tick}, not above its mark"),
                other => panic!("id {id} under machine id {other}"),
            }
        }
    });
}

/// Issue 56: the server as many actors. Two backends race on the state word while the worker
/// switches machine ids, each of the three preemptible between any two atomic steps. `ids` is
/// every id issued, by backend; each is checked against what its machine id allows.
mod many_backends {
    use super::*;
    use pg_snowflake_core::etcd::claim;
    use pg_snowflake_core::state::grant;
    use std::sync::atomic::Ordering::{Acquire, Release};

    const OLD: i64 = 1;
    const NEW: i64 = 2;

    /// A backend: `attempts` calls of `try_issue` at the clock reading `tick` (a constant: the
    /// clock is read before the grant, as on a server; loom cannot model the clock itself).
    fn backend(shared: &Arc<SharedState>, g: Generator, tick: i64, attempts: usize) -> thread::JoinHandle<Vec<i64>> {
        let shared = shared.clone();
        thread::spawn(move || {
            (0..attempts).filter_map(|_| g.try_issue(&shared, EPOCH + tick).ok().map(|(id, _)| id)).collect()
        })
    }

    /// Every id once, and each under a machine id only on the ticks `allowed` gives it.
    fn check(ids: Vec<i64>, allowed: impl Fn(i64, i64) -> bool) {
        let mut seen = std::collections::HashSet::new();
        for id in ids {
            assert!(seen.insert(id), "id {id} issued twice");
            let parts = layout().decode(id).unwrap();
            let tick = parts.unix_ms - EPOCH;
            assert!(allowed(parts.machine_id, tick), "id {id}: machine id {} at tick {tick}", parts.machine_id);
        }
    }

    /// The review's duplicate: a backend loads the grant (OLD, until 10) and stalls; the worker
    /// loses OLD and claims NEW (its recorded mark 11 taken as used); another backend issues
    /// under NEW at tick 13; the stalled backend resumes. Under OLD only ticks before 10 (the new
    /// holder of OLD issues above OLD's mark, 10); under NEW only ticks above 11.
    fn lost_and_switched(check_grant: GrantCheck) {
        model(move || {
            let shared = Arc::new(state(100));
            let bits = layout().machine_bits();
            shared.hot.grant.publish(grant::held(OLD, 10, bits));
            let g = Generator::new(layout(), 0).unwrap().with_grant_check(check_grant);
            let stalled = backend(&shared, g, 8, 1);
            let other = backend(&shared, g, 13, 2);
            // The worker: the lease of OLD lost (the grant taken away), NEW claimed: its mark used
            // up, then its grant published.
            shared.hot.grant.publish(grant::NOBODY);
            shared.use_up_to(11, layout().sequence_bits());
            shared.hot.grant.publish(grant::held(NEW, 20, bits));
            let ids = [stalled.join().unwrap(), other.join().unwrap()].concat();
            check(ids, |m, tick| match m {
                OLD => tick < 10,
                NEW => tick > 11,
                _ => false,
            });
        });
    }

    #[test]
    fn a_backend_stalled_across_a_lost_lease_issues_under_no_grant_past_its_end() {
        lost_and_switched(GrantCheck::Generation);
    }

    /// The negative control: with the grant checked as before issue 56, loom finds the review's
    /// duplicate (the stalled backend issues under OLD on the tick the other issued under NEW).
    #[test]
    #[should_panic(expected = "machine id 1 at tick 13")]
    fn without_the_fix_a_stalled_backend_issues_under_the_old_id_past_its_grant() {
        lost_and_switched(GrantCheck::Stale);
    }

    /// A clean release, then another id claimed (a worker terminated and started again): the
    /// grant of OLD (until 10) is taken away and its final mark computed as `Claimer::release`
    /// does; NEW is claimed with its recorded mark 8, below OLD's grant end, and published. A
    /// backend stalled with OLD's grant (clock at tick 6, read before the grant) and another under
    /// NEW (tick 9). The next holder of OLD issues above OLD's final mark, so under OLD only ticks
    /// at or below it; under NEW only above 8. Checking the tick against the grant's end is not
    /// enough here (9 < 10): the grant must be the one in force when the state word was taken.
    fn released_and_reclaimed(check_grant: GrantCheck) {
        model(move || {
            let shared = Arc::new(state(100));
            let bits = layout().machine_bits();
            shared.hot.grant.publish(grant::held(OLD, 10, bits));
            let g = Generator::new(layout(), 0).unwrap().with_grant_check(check_grant);
            let stalled = backend(&shared, g, 6, 1);
            let other = backend(&shared, g, 9, 2);
            let stopped = claim::stop_issuing(&shared, &layout(), || EPOCH + 6);
            let final_mark = claim::final_mark(&shared, &layout(), stopped, EPOCH + 10, EPOCH + 10) - EPOCH;
            shared.use_up_to(8, layout().sequence_bits());
            shared.hot.grant.publish(grant::held(NEW, 20, bits));
            let ids = [stalled.join().unwrap(), other.join().unwrap()].concat();
            check(ids, |m, tick| match m {
                OLD => tick <= final_mark,
                NEW => tick > 8,
                _ => false,
            });
        });
    }

    #[test]
    fn a_backend_stalled_across_a_release_issues_nothing_above_the_final_mark() {
        released_and_reclaimed(GrantCheck::Generation);
    }

    #[test]
    #[should_panic(expected = "machine id 1 at tick 9")]
    fn without_the_fix_a_stalled_backend_issues_above_the_final_mark() {
        released_and_reclaimed(GrantCheck::Stale);
    }

    /// The grant's ABA (`tests/grant_aba.rs`): OLD (until 10) released on a clock stepped back
    /// (the worker reads tick 3: the final mark is 4 unless a backend's word is above it), the
    /// next holder of OLD issues up to tick 9 and releases it, and this server claims OLD again:
    /// that holder's mark (9) used up, then the same word published again, held(OLD, 10). A
    /// backend read its clock at tick 9 before the step back and loaded the grant before the
    /// release (its load made before the worker starts); it takes a word at any point of the
    /// worker's steps, then stalls until OLD is claimed again (a flag), and confirms (starting over
    /// if it must). Loom's search, bounded by preemptions, did not reach that last order unforced,
    /// with one or two worker threads and another backend beside (two minutes each run); every
    /// interleaving of the take with the worker's steps, and every value each load may see, are
    /// still explored. Under OLD only ticks at or below the final mark (the first grant) or above 9
    /// (the second): a backend whose compare-and-swap landed after the release's read of the state
    /// word must not confirm under the grant published again.
    fn released_and_claimed_again(check_grant: GrantCheck) {
        model(move || {
            let shared = Arc::new(state(100));
            let bits = layout().machine_bits();
            shared.hot.grant.publish(grant::held(OLD, 10, bits));
            let g = Generator::new(layout(), 0).unwrap().with_grant_check(check_grant);
            let loaded = Generator::load_grant(&shared);
            let claimed_again = Arc::new(AtomicBool::new(false));
            let stalled = {
                let (shared, claimed_again) = (shared.clone(), claimed_again.clone());
                thread::spawn(move || {
                    let resumed = g.take::<false>(&shared, 9, loaded).ok().flatten();
                    // Stalled again until OLD is claimed again (a flag: loom's bounded search
                    // alone did not reach this order).
                    while !claimed_again.load(Acquire) {
                        thread::yield_now();
                    }
                    match resumed.map(|t| g.confirm(&shared, t)) {
                        Some(Some((id, _))) => vec![id],
                        // Refused, a wait, or the grant changed: an attempt as any other.
                        _ => g.try_issue(&shared, EPOCH + 9).ok().map(|(id, _)| id).into_iter().collect(),
                    }
                })
            };
            // The worker releases OLD; the next holder issues up to tick 9 and releases it; the
            // worker claims OLD again: that holder's mark used up, the same word published.
            let worker = {
                let shared = shared.clone();
                thread::spawn(move || {
                    let stopped = claim::stop_issuing(&shared, &layout(), || EPOCH + 3);
                    let final_mark = claim::final_mark(&shared, &layout(), stopped, EPOCH + 10, EPOCH + 10) - EPOCH;
                    shared.use_up_to(9, layout().sequence_bits());
                    shared.hot.grant.publish(grant::held(OLD, 10, bits));
                    claimed_again.store(true, Release);
                    final_mark
                })
            };
            let final_mark = worker.join().unwrap();
            let ids = stalled.join().unwrap();
            check(ids, |m, tick| m == OLD && (tick <= final_mark || tick > 9));
        });
    }

    #[test]
    fn a_grant_published_again_with_the_same_word_is_a_new_grant() {
        released_and_claimed_again(GrantCheck::Generation);
    }

    /// The negative control: confirmed by the grant's word alone, loom finds the ABA (an id under
    /// OLD at tick 9, above the final mark 4, which the next holder of OLD issued too).
    #[test]
    #[should_panic(expected = "machine id 1 at tick 9")]
    fn confirmed_by_the_word_alone_a_backend_issues_under_a_grant_published_again() {
        released_and_claimed_again(GrantCheck::Word);
    }

    /// Issue 61: the raw entry point's plain case (`Generator::issue_plain`) and the guarded path
    /// (`try_issue`), the same steps, racing across a lease lost and another id claimed: every id
    /// once, each within its grant.
    #[test]
    fn the_plain_case_and_the_guarded_path_across_a_lost_lease() {
        model(|| {
            let shared = Arc::new(state(100));
            let bits = layout().machine_bits();
            shared.hot.grant.publish(grant::held(OLD, 10, bits));
            let g = Generator::new(layout(), 0).unwrap();
            let fast = {
                let shared = shared.clone();
                thread::spawn(move || {
                    [8_i64, 9, 13]
                        .into_iter()
                        .filter_map(|tick| g.issue_plain(&shared, EPOCH + tick))
                        .collect::<Vec<_>>()
                })
            };
            let guarded = backend(&shared, g, 13, 2);
            shared.hot.grant.publish(grant::NOBODY);
            shared.use_up_to(11, layout().sequence_bits());
            shared.hot.grant.publish(grant::held(NEW, 20, bits));
            let ids = [fast.join().unwrap(), guarded.join().unwrap()].concat();
            check(ids, |m, tick| match m {
                OLD => tick < 10,
                NEW => tick > 11,
                _ => false,
            });
        });
    }

    /// A renewal (the same id, a later end) while two backends issue: no id twice, none past the
    /// end of the grant it was issued under, and both backends get ids (a grant changed under a
    /// backend makes it start over, never fail).
    #[test]
    fn backends_issue_across_a_renewal() {
        model(|| {
            let shared = Arc::new(state(100));
            let bits = layout().machine_bits();
            shared.hot.grant.publish(grant::held(OLD, 10, bits));
            let g = Generator::new(layout(), 0).unwrap();
            let a = backend(&shared, g, 8, 1);
            let b = backend(&shared, g, 9, 1);
            shared.hot.grant.publish(grant::held(OLD, 12, bits));
            let (a, b) = (a.join().unwrap(), b.join().unwrap());
            assert_eq!((a.len(), b.len()), (1, 1), "each backend issued");
            check([a, b].concat(), |m, tick| m == OLD && tick < 12);
        });
    }
}
