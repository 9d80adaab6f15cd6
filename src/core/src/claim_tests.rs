use super::*;
use crate::etcd_model::EtcdModel;
use crate::generator::{Blocked, Generator};
use crate::state::SharedState;

pub(crate) const EPOCH: i64 = 1_735_689_600_000; // 2025-01-01

pub(crate) fn holder(n: u32) -> Holder {
    Holder {
        system_identifier: format!("74000000000000000{n}"),
        host: format!("db{n}"),
        port: 5432,
        data_directory: "/var/lib/postgresql/15/main".into(),
    }
}

pub(crate) fn space(machine_bits: u32) -> Space {
    Space { prefix: "/pg_snowflake/test".into(), ttl_s: 3, size: 1 << machine_bits }
}

pub(crate) fn layout(machine_bits: u32) -> Layout {
    Layout::new(EPOCH, 1, machine_bits, 12).unwrap()
}

/// A server's shared state with the mark file out of the way (these tests are about the etcd
/// claim) and nothing held yet.
pub(crate) fn server() -> SharedState {
    let s = SharedState::starting_at(None, 12, 0);
    s.mark.tick.store(i64::MAX, Relaxed);
    s.hot.grant.store(grant::NOBODY, Relaxed);
    s
}

fn claimer(n: u32, machine_bits: u32) -> Claimer {
    Claimer::new(space(machine_bits), holder(n), layout(machine_bits), Switches::ALL_ON)
}

fn issue(shared: &SharedState, bits: u32, now_ms: i64) -> Result<i64, Blocked> {
    let g = Generator::new(layout(bits), 0).unwrap();
    g.try_issue(shared, now_ms).map(|(id, _)| id).map_err(|e| e.expect("no error that waiting cannot cure"))
}

#[test]
fn the_lowest_free_id_is_claimed_and_own_id_comes_back() {
    let s = space(2);
    let mut claims = Claims::new();
    let mut marks = Marks::new();
    assert_eq!(choose(&s, &holder(1), &claims, &marks), Ok(0));
    claims.insert(0, holder(2));
    claims.insert(1, holder(3));
    assert_eq!(choose(&s, &holder(1), &claims, &marks), Ok(2));
    marks.insert(3, MarkRecord { mark_ms: 5, layout: String::new(), holder: holder(1) });
    assert_eq!(choose(&s, &holder(1), &claims, &marks), Ok(3), "its own last id, free");
    claims.insert(3, holder(1));
    assert_eq!(choose(&s, &holder(1), &claims, &marks), Err(ClaimError::OwnEarlierClaim { id: 3 }));
    claims.insert(2, holder(4));
    let Err(e @ ClaimError::Exhausted { size: 4, .. }) = choose(&s, &holder(5), &claims, &marks) else { panic!() };
    let text = e.message(&s);
    assert!(text.contains("(4 ids, snowflake.machine_bits)") && text.contains("3 by db1:5432"), "{text}");
}

#[test]
fn a_claim_publishes_the_id_until_the_local_deadline_recorded_as_the_mark() {
    let mut etcd = EtcdModel::at(EPOCH + 10_000);
    let shared = server();
    assert_eq!(issue(&shared, 4, EPOCH + 10_000), Err(Blocked::NotHeld), "nothing before the claim");
    let mut c = claimer(1, 4);
    let Ok(Step::Claimed(held)) = c.step(&mut etcd.client(false), &shared, EPOCH + 10_000) else { panic!() };
    assert_eq!((held.id, held.deadline_ms), (0, EPOCH + 10_000 + 3_000 - 600));
    let recorded: MarkRecord = serde_json::from_str(etcd.value("/pg_snowflake/test/mark/0").unwrap()).unwrap();
    assert_eq!(recorded.mark_ms, held.deadline_ms, "the mark covers every id until the deadline");
    let id = issue(&shared, 4, EPOCH + 10_001).unwrap();
    assert_eq!(layout(4).decode(id).unwrap().machine_id, 0);
    assert_eq!(issue(&shared, 4, held.deadline_ms - 1).map(|_| ()), Ok(()));
    assert_eq!(issue(&shared, 4, held.deadline_ms), Err(Blocked::NotHeld), "none at the deadline");
    // A renewal moves both on.
    let Ok(Step::Idle) = c.step(&mut etcd.client(false), &shared, EPOCH + 10_500) else { panic!() };
    etcd.now_ms = EPOCH + 11_000;
    let Ok(Step::Renewed(h)) = c.step(&mut etcd.client(false), &shared, EPOCH + 11_000) else { panic!() };
    assert_eq!(h.deadline_ms, EPOCH + 11_000 + 2_400);
    assert!(issue(&shared, 4, EPOCH + 13_000).is_ok());
    assert_eq!(shared.claim.claims.load(Relaxed), 1);
    assert_eq!(shared.claim.renewals.load(Relaxed), 1);
}

#[test]
fn a_new_holder_whose_clock_is_behind_issues_nothing_at_or_below_the_recorded_mark() {
    let mut etcd = EtcdModel::at(EPOCH + 100_000);
    let (a, b) = (server(), server());
    let mut ca = claimer(1, 4);
    ca.step(&mut etcd.client(false), &a, EPOCH + 100_000).unwrap();
    let last_a = issue(&a, 4, EPOCH + 102_000).unwrap();
    // A dies; its lease expires in etcd; B, 5 s behind, claims the same id.
    etcd.now_ms += 4_000;
    let mut cb = claimer(2, 4);
    let Ok(Step::Claimed(h)) = cb.step(&mut etcd.client(false), &b, EPOCH + 99_000) else { panic!() };
    assert_eq!(h.id, 0, "the id A held");
    assert!(a.claim.inherited().is_none(), "A found no mark: the id was new");
    let (inherited_ms, from) = b.claim.inherited().expect("B found A's mark");
    assert!(inherited_ms >= EPOCH + 102_000, "A's mark covers its last id: {inherited_ms}");
    assert!(from.starts_with("db1:5432 (data directory "), "a refusal names who recorded it: {from}");
    assert!(matches!(issue(&b, 4, EPOCH + 99_001), Err(Blocked::Tick { .. })), "waits for its clock to pass A's mark");
    // Its worker renews as the clock goes on; the first id comes once the clock passes the mark.
    etcd.now_ms += 2_000;
    let Ok(Step::Renewed(_)) = cb.step(&mut etcd.client(false), &b, EPOCH + 101_000) else { panic!() };
    assert!(matches!(issue(&b, 4, EPOCH + 102_400), Err(Blocked::Tick { .. })));
    let first_b = issue(&b, 4, EPOCH + 102_401).unwrap();
    assert!(first_b > last_a, "{first_b} > {last_a}");

    // Negative control: without the recorded mark, B issues below A.
    let mut etcd = EtcdModel::at(EPOCH + 100_000);
    let (a, b) = (server(), server());
    let mut ca = claimer(1, 4);
    ca.step(&mut etcd.client(false), &a, EPOCH + 100_000).unwrap();
    let last_a = issue(&a, 4, EPOCH + 102_000).unwrap();
    etcd.now_ms += 4_000;
    let mut cb = Claimer::new(space(4), holder(2), layout(4), Switches { recorded_mark: false, ..Switches::ALL_ON });
    cb.step(&mut etcd.client(false), &b, EPOCH + 99_000).unwrap();
    assert!(issue(&b, 4, EPOCH + 99_001).unwrap() < last_a, "the control: the mechanism is what keeps it above");
}

#[test]
fn a_holder_paused_past_its_lease_issues_nothing_when_it_resumes() {
    for deadline in [true, false] {
        let mut etcd = EtcdModel::at(EPOCH + 50_000);
        let (a, b) = (server(), server());
        let mut ca = Claimer::new(space(4), holder(1), layout(4), Switches { deadline, ..Switches::ALL_ON });
        ca.step(&mut etcd.client(false), &a, EPOCH + 50_000).unwrap();
        issue(&a, 4, EPOCH + 50_001).unwrap();
        // A is stopped (SIGSTOP, a VM pause) for 10 s; B claims the id at once when it is free.
        etcd.now_ms += 10_000;
        let mut cb = claimer(2, 4);
        let Ok(Step::Claimed(h)) = cb.step(&mut etcd.client(false), &b, EPOCH + 60_000) else { panic!() };
        assert_eq!(h.id, 0);
        let by_b = issue(&b, 4, EPOCH + 60_001).unwrap();
        // A resumes: a backend first, before its worker notices.
        let by_a = issue(&a, 4, EPOCH + 60_001);
        if deadline {
            assert_eq!(by_a, Err(Blocked::NotHeld));
        } else {
            assert_eq!(by_a, Ok(by_b), "the control: without the deadline, the same id twice");
            continue;
        }
        let Err(ClaimError::Lost { id: 0, .. }) = ca.step(&mut etcd.client(false), &a, EPOCH + 60_002) else {
            panic!()
        };
        assert_eq!(a.claim.losses.load(Relaxed), 1);
        assert!(a.claim.error().unwrap().contains("the lease of machine id 0 was lost"));
        // It claims again: another id.
        let Ok(Step::Claimed(h)) = ca.step(&mut etcd.client(false), &a, EPOCH + 60_003) else { panic!() };
        assert_eq!(h.id, 1);
    }
}

#[test]
fn a_clean_stop_records_the_last_tick_and_frees_the_id_for_the_same_server() {
    let mut etcd = EtcdModel::at(EPOCH + 20_000);
    let a = server();
    let mut ca = claimer(1, 4);
    ca.step(&mut etcd.client(false), &a, EPOCH + 20_000).unwrap();
    let mut cb = claimer(2, 4);
    cb.step(&mut etcd.client(false), &server(), EPOCH + 20_000).unwrap();
    let last = issue(&a, 4, EPOCH + 20_100).unwrap();
    ca.release(&mut etcd.client(false), &a, || EPOCH + 20_200).unwrap();
    assert_eq!(issue(&a, 4, EPOCH + 20_201), Err(Blocked::NotHeld));
    assert_eq!(etcd.value("/pg_snowflake/test/claim/0"), None, "freed at once");
    let m: MarkRecord = serde_json::from_str(etcd.value("/pg_snowflake/test/mark/0").unwrap()).unwrap();
    assert_eq!(m.mark_ms, EPOCH + 20_201, "lowered to the stop (and a tick: see stop_issuing), not the deadline");
    // The same server starts again (a new shared state, as after a restart): its id back.
    let again = server();
    let mut ca = claimer(1, 4);
    let Ok(Step::Claimed(h)) = ca.step(&mut etcd.client(false), &again, EPOCH + 20_300) else { panic!() };
    assert_eq!(h.id, 0);
    assert!(issue(&again, 4, EPOCH + 20_301).unwrap() > last);
}

#[test]
fn a_crashed_server_waits_for_its_own_lease_rather_than_use_up_another_id() {
    let mut etcd = EtcdModel::at(EPOCH + 20_000);
    let mut ca = claimer(1, 4);
    ca.step(&mut etcd.client(false), &server(), EPOCH + 20_000).unwrap();
    let restarted = server();
    let mut ca = claimer(1, 4);
    etcd.now_ms += 1_000;
    let e = ca.step(&mut etcd.client(false), &restarted, EPOCH + 21_000).unwrap_err();
    assert_eq!(e, ClaimError::OwnEarlierClaim { id: 0 });
    etcd.now_ms += 3_000;
    let Ok(Step::Claimed(h)) = ca.step(&mut etcd.client(false), &restarted, EPOCH + 24_000) else { panic!() };
    assert_eq!(h.id, 0);
}

#[test]
fn five_servers_in_a_space_of_four_ids_the_fifth_is_refused_naming_the_holders() {
    let mut etcd = EtcdModel::at(EPOCH);
    let mut ids = vec![];
    for n in 1..=4 {
        let Ok(Step::Claimed(h)) = claimer(n, 2).step(&mut etcd.client(false), &server(), EPOCH) else { panic!() };
        ids.push(h.id);
    }
    assert_eq!(ids, [0, 1, 2, 3]);
    let fifth = server();
    let e = claimer(5, 2).step(&mut etcd.client(false), &fifth, EPOCH).unwrap_err();
    assert!(matches!(e, ClaimError::Exhausted { size: 4, ref holders } if holders.len() == 4));
    assert!(fifth.claim.error().unwrap().contains("every machine id of the id space /pg_snowflake/test is held"));
    assert_eq!(issue(&fifth, 2, EPOCH), Err(Blocked::NotHeld));
}

#[test]
fn etcd_unreachable_keeps_the_id_until_its_deadline_then_nothing() {
    let mut etcd = EtcdModel::at(EPOCH);
    let a = server();
    let mut ca = claimer(1, 4);
    ca.step(&mut etcd.client(false), &a, EPOCH).unwrap();
    etcd.now_ms = EPOCH + 1_000;
    let e = ca.step(&mut etcd.client(true), &a, EPOCH + 1_000).unwrap_err();
    assert!(matches!(e, ClaimError::Unreachable(_)));
    assert_eq!(a.claim.renewal_failures.load(Relaxed), 1);
    assert!(issue(&a, 4, EPOCH + 2_000).is_ok(), "still before the deadline");
    assert_eq!(issue(&a, 4, EPOCH + 2_400), Err(Blocked::NotHeld));
    // etcd back before the lease expired: the renewal keeps the id.
    etcd.now_ms = EPOCH + 2_500;
    let Ok(Step::Renewed(h)) = ca.step(&mut etcd.client(false), &a, EPOCH + 2_500) else { panic!() };
    assert_eq!(h.id, 0);
    assert!(issue(&a, 4, EPOCH + 2_600).is_ok());
}

#[test]
fn a_mark_of_another_layout_is_refused_and_the_claim_given_back() {
    let mut etcd = EtcdModel::at(EPOCH);
    let a = server();
    let mut ca = claimer(1, 4);
    ca.step(&mut etcd.client(false), &a, EPOCH).unwrap();
    ca.release(&mut etcd.client(false), &a, || EPOCH + 10).unwrap();
    let mut other = Claimer::new(space(4), holder(1), Layout::new(EPOCH, 2, 4, 12).unwrap(), Switches::ALL_ON);
    let e = other.step(&mut etcd.client(false), &server(), EPOCH + 20).unwrap_err();
    assert!(matches!(e, ClaimError::LayoutDiffers { id: 0, .. }), "{e:?}");
    assert_eq!(etcd.value("/pg_snowflake/test/claim/0"), None);
}
