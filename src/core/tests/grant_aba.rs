//! Issue 56's ABA, as an adversarial review found it in the fix's first form: a confirmation
//! that compared the grant words' values let a grant published again with exactly the same word
//! (a release whose final mark was lowered below the grant's end on a clock stepped back, then a
//! claim of the same id whose deadline falls in the same tick; or any two grants of one id near
//! the end of the timestamp field, where every deadline is clamped to the last tick) pass for the
//! grant a backend loaded before the release, so that a backend that took the state word after
//! the release issued an id the id's next holder issued too. The confirmation now compares the
//! grant's generation (`state::GrantCell`); confirmed by the word alone, the same steps issue
//! that id (the negative control).
#![cfg(not(loom))]

use pg_snowflake_core::etcd::claim;
use pg_snowflake_core::generator::{Generator, GrantCheck};
use pg_snowflake_core::state::{grant, SharedState};
use pg_snowflake_core::Layout;
use std::sync::atomic::Ordering::Relaxed;

const EPOCH: i64 = 1_735_689_600_000;

fn layout() -> Layout {
    Layout::new(EPOCH, 1, 10, 2).unwrap()
}

fn state() -> SharedState {
    let s = SharedState::starting_at(None, 2, EPOCH);
    s.raise_to_mark(100, EPOCH + 100, 2);
    s.hot.state.store(0, Relaxed);
    s
}

/// Backend X of server S1 loads the grant of A and stalls; S1 releases A on a clock stepped back;
/// X takes the state word; server S2 claims A and issues; S2 releases; S1 claims A again and
/// publishes the same word; X confirms. `Some` with the ids of X and of S2, if X issued.
fn released_and_claimed_again(check: GrantCheck) -> Option<(i64, i64)> {
    const A: i64 = 1;
    let bits = layout().machine_bits();
    let s1 = state();
    let g = Generator::new(layout(), 0).unwrap().with_grant_check(check);
    s1.hot.grant.publish(grant::held(A, 10, bits));
    // Backend X on server S1: its clock read at tick 9, the grant loaded; it stalls.
    let loaded = Generator::load_grant(&s1);
    // S1's worker releases A; its wall clock was stepped back to tick 3 meanwhile.
    let stopped = claim::stop_issuing(&s1, &layout(), || EPOCH + 3);
    let final_mark = claim::final_mark(&s1, &layout(), stopped, EPOCH + 10, EPOCH + 10) - EPOCH;
    // X's compare-and-swap lands after the release's read-modify-write; X stalls again.
    let taken = g.take::<false>(&s1, 9, loaded).unwrap().unwrap();
    // Server S2 claims A, takes every tick up to S1's final mark as used, issues at tick 9.
    let s2 = state();
    s2.hot.grant.publish(grant::held(A, 20, bits));
    s2.use_up_to(final_mark, 2);
    let (s2_id, _) = g.try_issue(&s2, EPOCH + 9).unwrap();
    // S2 releases (final mark 9); S1 claims A again, uses up to 9, publishes held(A, 10) again.
    s1.use_up_to(9, 2);
    s1.hot.grant.publish(grant::held(A, 10, bits));
    assert_eq!(final_mark, 4, "the release's final mark, below the tick X took");
    g.confirm(&s1, taken).map(|(x_id, _)| (x_id, s2_id))
}

#[test]
fn a_grant_published_again_with_the_same_word_is_not_the_grant_a_backend_loaded() {
    assert_eq!(released_and_claimed_again(GrantCheck::Generation), None, "X's word is let go: a gap");
}

/// The negative control: confirmed by the word alone, X issues S2's very id.
#[test]
fn confirmed_by_the_word_alone_the_backend_issues_the_next_holder_s_id() {
    let (x_id, s2_id) = released_and_claimed_again(GrantCheck::Word).expect("X confirms");
    assert_eq!(x_id, s2_id);
}
