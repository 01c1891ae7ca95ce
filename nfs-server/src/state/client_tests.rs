//! Tests of the client records: every case of RFC 8881 section 18.35.5, confirmation,
//! DESTROY_CLIENTID and lease expiry.

use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::{
    ClientOwner4, CreateSessionResOk, ExchangeIdArgs, NfsImplId4, NfsStat4, SsvSpParms4,
    StateProtect4A, StateProtectOps4, EXCHGID4_FLAG_CONFIRMED_R, EXCHGID4_FLAG_SUPP_FENCE_OPS,
    EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, EXCHGID4_FLAG_USE_NON_PNFS, EXCHGID4_FLAG_USE_PNFS_DS,
    EXCHGID4_FLAG_USE_PNFS_MDS,
};
use nfs_proto::rpc::{AuthSysParms, Credential};

use super::*;
use crate::clock::{Clock, ManualClock};

const LEASE: Duration = Duration::from_secs(90);

fn table() -> ClientTable {
    ClientTable::new(ClientTableConfig {
        boot_epoch: 3,
        lease_time: LEASE,
        roles: EXCHGID4_FLAG_USE_PNFS_MDS,
        ..Default::default()
    })
}

fn args(owner: &'static str, verifier: u8, flags: u32) -> ExchangeIdArgs {
    ExchangeIdArgs {
        eia_clientowner: ClientOwner4 {
            co_verifier: [verifier; 8],
            co_ownerid: Bytes::from_static(owner.as_bytes()),
        },
        eia_flags: flags,
        eia_state_protect: StateProtect4A::None,
        eia_client_impl_id: Vec::new(),
    }
}

const ROOT: Principal = Principal::Uid(0);
const ALICE: Principal = Principal::Uid(1000);

fn no_state(_: Clientid4) -> bool {
    false
}

fn exchange(
    t: &mut ClientTable,
    owner: &'static str,
    verifier: u8,
    flags: u32,
    who: &Principal,
    now: Instant,
) -> Result<ExchangeIdOk, ClientError> {
    t.exchange_id(&args(owner, verifier, flags), who, 1, no_state, now)
}

/// EXCHANGE_ID then confirmation, as CREATE_SESSION does it.
fn confirmed_client(
    t: &mut ClientTable,
    owner: &'static str,
    verifier: u8,
    now: Instant,
) -> Clientid4 {
    let ok = exchange(t, owner, verifier, 0, &ROOT, now).unwrap();
    t.confirm(ok.clientid);
    ok.clientid
}

#[test]
fn case1_new_owner_gets_new_unconfirmed_record_with_sequenceid_1() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let ok = exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap();
    assert_eq!(ok.case, ExchangeIdCase::NewOwner);
    assert_eq!(ok.sequenceid, 1);
    assert_eq!(ok.flags & EXCHGID4_FLAG_CONFIRMED_R, 0);
    assert_eq!(ok.flags, EXCHGID4_FLAG_USE_PNFS_MDS);
    assert_eq!(ok.state_protect, StateProtect4R::None);
    let rec = t.get(ok.clientid).unwrap();
    assert!(!rec.is_confirmed());
    assert_eq!(
        t.confirmed(ok.clientid).err(),
        Some(ClientError::StaleClientid)
    );
}

#[test]
fn client_ids_carry_the_boot_epoch_in_the_high_16_bits() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let a = exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap().clientid;
    let b = exchange(&mut t, "b", 1, 0, &ROOT, t0).unwrap().clientid;
    assert_eq!(a >> 48, 3);
    assert_eq!(b >> 48, 3);
    assert_ne!(a, b);
    assert_eq!(a & 0xffff_ffff_ffff, 1);
}

#[test]
fn case2_same_owner_verifier_principal_returns_confirmed_record() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let id = confirmed_client(&mut t, "a", 1, t0);
    let ok = exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap();
    assert_eq!(ok.case, ExchangeIdCase::Existing);
    assert_eq!(ok.clientid, id);
    assert_ne!(ok.flags & EXCHGID4_FLAG_CONFIRMED_R, 0);
    assert_eq!(t.len(), 1);
}

#[test]
fn case2_sequenceid_is_the_next_create_session_sequence() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let id = confirmed_client(&mut t, "a", 1, t0);
    let res = CreateSessionResOk {
        csr_sessionid: [0; 16],
        csr_sequence: 1,
        csr_flags: 0,
        csr_fore_chan_attrs: Default::default(),
        csr_back_chan_attrs: Default::default(),
    };
    t.record_create_session(id, &res);
    assert_eq!(
        exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap().sequenceid,
        2
    );
}

#[test]
fn case3_other_principal_with_state_is_clid_inuse() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let id = confirmed_client(&mut t, "a", 1, t0);
    let e = t
        .exchange_id(&args("a", 1, 0), &ALICE, 1, |c| c == id, t0)
        .unwrap_err();
    assert_eq!(e, ClientError::ClidInUse);
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_CLID_INUSE);
}

#[test]
fn case3_other_principal_with_sessions_is_clid_inuse() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let id = confirmed_client(&mut t, "a", 1, t0);
    t.add_session(id, [1; 16]);
    assert_eq!(
        exchange(&mut t, "a", 1, 0, &ALICE, t0).unwrap_err(),
        ClientError::ClidInUse
    );
}

#[test]
fn case3_other_principal_without_state_removes_the_old_record_at_once() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let old = confirmed_client(&mut t, "a", 1, t0);
    let ok = exchange(&mut t, "a", 2, 0, &ALICE, t0).unwrap();
    assert_eq!(ok.case, ExchangeIdCase::CollisionReplaced);
    assert_ne!(ok.clientid, old);
    let [gone] = &ok.removed[..] else {
        panic!("the old record is removed: {:?}", ok.removed)
    };
    assert_eq!(
        (gone.clientid, gone.was_confirmed, gone.reason),
        (old, true, RemovalReason::Replaced)
    );
    assert_eq!(gone.successor, None, "another principal inherits nothing");
    assert!(t.get(old).is_none(), "its client id is stale now");
    assert!(t.confirmed_by_owner(b"a").is_none());
    let events = t.confirm(ok.clientid);
    assert!(
        matches!(&events[..], [ClientEvent::Confirmed(p)] if p.clientid == ok.clientid),
        "{events:?}"
    );
    assert_eq!(t.confirmed_by_owner(b"a").unwrap().principal(), &ALICE);
}

#[test]
fn case3_other_principal_with_state_but_expired_lease_is_replaced() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let id = confirmed_client(&mut t, "a", 1, t0);
    let ok = t
        .exchange_id(&args("a", 1, 0), &ALICE, 1, |c| c == id, t0 + LEASE)
        .unwrap();
    assert_eq!(ok.case, ExchangeIdCase::CollisionReplaced);
    let removed: Vec<_> = ok.removed.iter().map(|r| r.clientid).collect();
    assert_eq!(removed, [id]);
}

#[test]
fn case4_unconfirmed_record_is_replaced_with_a_new_clientid() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let first = exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap().clientid;
    let ok = exchange(&mut t, "a", 2, 0, &ALICE, t0).unwrap();
    assert_eq!(ok.case, ExchangeIdCase::ReplaceUnconfirmed);
    assert_ne!(ok.clientid, first);
    assert!(t.get(first).is_none());
    assert_eq!(t.len(), 1);
    assert!(
        !t.leases().is_expired(first, t0 + LEASE * 2),
        "lease gone too"
    );
    assert_eq!(t.leases().len(), 1);
}

#[test]
fn case4_retransmitted_exchange_id_before_confirmation_also_replaces() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let first = exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap().clientid;
    let ok = exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap();
    assert_eq!(ok.case, ExchangeIdCase::ReplaceUnconfirmed);
    assert_ne!(ok.clientid, first);
}

#[test]
fn case5_client_restart_gets_new_record_and_old_goes_at_confirmation() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let old = confirmed_client(&mut t, "a", 1, t0);
    t.add_session(old, [9; 16]);
    let ok = exchange(&mut t, "a", 2, 0, &ROOT, t0).unwrap();
    assert_eq!(ok.case, ExchangeIdCase::ClientRestart);
    assert_ne!(ok.clientid, old);
    assert_eq!(ok.sequenceid, 1);
    assert_eq!(ok.flags & EXCHGID4_FLAG_CONFIRMED_R, 0);
    assert!(t.confirmed(old).is_ok());
    let events = t.confirm(ok.clientid);
    assert_eq!(events.len(), 2);
    match &events[0] {
        ClientEvent::Removed(r) => {
            assert_eq!(r.clientid, old);
            assert!(r.was_confirmed);
            assert_eq!(r.sessions, vec![[9; 16]]);
            assert_eq!(r.reason, RemovalReason::Replaced);
            assert_eq!(r.successor, Some(ok.clientid), "the same client, restarted");
        }
        e => panic!("{e:?}"),
    }
    match &events[1] {
        ClientEvent::Confirmed(p) => {
            assert_eq!(p.clientid, ok.clientid);
            assert_eq!(p.ownerid, b"a");
            assert_eq!(p.verifier, [2; 8]);
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(t.confirmed_by_owner(b"a").unwrap().clientid(), ok.clientid);
    assert!(t.get(old).is_none());
}

#[test]
fn case6_update_of_confirmed_record_keeps_clientid() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let id = confirmed_client(&mut t, "a", 1, t0);
    let mut a = args("a", 1, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A);
    a.eia_client_impl_id = vec![NfsImplId4::default()];
    let ok = t.exchange_id(&a, &ROOT, 1, no_state, t0).unwrap();
    assert_eq!(ok.case, ExchangeIdCase::Update);
    assert_eq!(ok.clientid, id);
    assert_ne!(ok.flags & EXCHGID4_FLAG_CONFIRMED_R, 0);
    assert!(t.get(id).unwrap().impl_id().is_some());
}

#[test]
fn case7_update_without_confirmed_record_is_noent() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let e = exchange(&mut t, "a", 1, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, &ROOT, t0).unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_NOENT);
    exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap();
    let e = exchange(&mut t, "a", 1, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, &ROOT, t0).unwrap_err();
    assert_eq!(
        e,
        ClientError::NoEnt,
        "an unconfirmed record does not count"
    );
}

#[test]
fn case8_update_with_other_verifier_is_not_same() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    confirmed_client(&mut t, "a", 1, t0);
    let e = exchange(&mut t, "a", 2, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, &ROOT, t0).unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_NOT_SAME);
}

#[test]
fn case9_update_by_other_principal_is_perm() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    confirmed_client(&mut t, "a", 1, t0);
    let e = exchange(
        &mut t,
        "a",
        1,
        EXCHGID4_FLAG_UPD_CONFIRMED_REC_A,
        &ALICE,
        t0,
    )
    .unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_PERM);
}

#[test]
fn confirmed_r_or_undefined_flags_in_arguments_are_inval() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    for bad in [EXCHGID4_FLAG_CONFIRMED_R, 0x0000_1000] {
        let e = exchange(&mut t, "a", 1, bad, &ROOT, t0).unwrap_err();
        assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_INVAL);
    }
}

#[test]
fn supp_fence_ops_is_a_minor_version_2_flag() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let a = args("a", 1, EXCHGID4_FLAG_SUPP_FENCE_OPS);
    assert_eq!(
        t.exchange_id(&a, &ROOT, 1, no_state, t0),
        Err(ClientError::Inval),
        "RFC 8881 does not define it"
    );
    assert!(t.exchange_id(&a, &ROOT, 2, no_state, t0).is_ok());
}

#[test]
fn machine_credential_protection_is_inval_and_ssv_unsupported() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let mut a = args("a", 1, 0);
    a.eia_state_protect = StateProtect4A::MachCred(StateProtectOps4::default());
    assert_eq!(
        t.exchange_id(&a, &ROOT, 1, no_state, t0),
        Err(ClientError::Inval)
    );
    a.eia_state_protect = StateProtect4A::Ssv(SsvSpParms4::default());
    let e = t.exchange_id(&a, &ROOT, 1, no_state, t0).unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_ENCR_ALG_UNSUPP);
}

#[test]
fn pnfs_role_is_the_requested_one_the_server_plays_or_all_its_roles() {
    let t0 = ManualClock::new().now();
    let mut t = ClientTable::new(ClientTableConfig {
        roles: EXCHGID4_FLAG_USE_PNFS_MDS | EXCHGID4_FLAG_USE_PNFS_DS,
        ..Default::default()
    });
    let ok = exchange(&mut t, "a", 1, EXCHGID4_FLAG_USE_PNFS_DS, &ROOT, t0).unwrap();
    assert_eq!(ok.flags, EXCHGID4_FLAG_USE_PNFS_DS);
    let ok = exchange(&mut t, "b", 1, EXCHGID4_FLAG_USE_NON_PNFS, &ROOT, t0).unwrap();
    assert_eq!(
        ok.flags,
        EXCHGID4_FLAG_USE_PNFS_MDS | EXCHGID4_FLAG_USE_PNFS_DS
    );
}

#[test]
fn confirmation_emits_the_record_to_persist() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let ok = exchange(&mut t, "a", 4, 0, &ALICE, t0).unwrap();
    let events = t.confirm(ok.clientid);
    assert_eq!(
        events,
        vec![ClientEvent::Confirmed(PersistedClient {
            clientid: ok.clientid,
            ownerid: b"a".to_vec(),
            verifier: [4; 8],
            principal: ALICE,
        })]
    );
    assert!(
        t.confirm(ok.clientid).is_empty(),
        "confirming twice changes nothing"
    );
    assert!(t.confirmed(ok.clientid).unwrap().is_confirmed());
}

#[test]
fn destroy_clientid_with_sessions_or_state_is_clientid_busy() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let id = confirmed_client(&mut t, "a", 1, t0);
    let e = t.destroy_clientid(id, true).unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_CLIENTID_BUSY);
    t.add_session(id, [1; 16]);
    assert_eq!(
        t.destroy_clientid(id, false),
        Err(ClientError::ClientidBusy)
    );
    t.remove_session(id, &[1; 16]);
    let gone = t.destroy_clientid(id, false).unwrap();
    assert_eq!(gone.reason, RemovalReason::Destroyed);
    assert!(gone.was_confirmed);
    assert!(t.is_empty());
    assert!(t.leases().is_empty());
}

#[test]
fn destroy_of_unknown_clientid_is_stale_clientid() {
    let mut t = table();
    let e = t.destroy_clientid(12345, false).unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_STALE_CLIENTID);
}

#[test]
fn destroy_of_unconfirmed_record_is_allowed() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let id = exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap().clientid;
    assert!(!t.destroy_clientid(id, false).unwrap().was_confirmed);
    // the owner can start over
    assert_eq!(
        exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap().case,
        ExchangeIdCase::NewOwner
    );
}

#[test]
fn lease_expiry_removes_confirmed_and_unconfirmed_records() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let a = confirmed_client(&mut t, "a", 1, t0);
    let b = exchange(&mut t, "b", 1, 0, &ROOT, t0 + Duration::from_secs(10))
        .unwrap()
        .clientid;
    assert_eq!(t.next_expiry(), Some(t0 + LEASE));
    assert!(t.expire(t0 + Duration::from_secs(89)).is_empty());
    let gone = t.expire(t0 + LEASE);
    assert_eq!(gone.len(), 1);
    assert_eq!(
        (gone[0].clientid, gone[0].reason),
        (a, RemovalReason::Expired)
    );
    assert!(t.confirmed_by_owner(b"a").is_none());
    let gone = t.expire(t0 + LEASE + Duration::from_secs(10));
    assert_eq!(gone[0].clientid, b);
    assert!(!gone[0].was_confirmed);
    assert!(t.is_empty());
}

#[test]
fn renewal_keeps_the_client() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let a = confirmed_client(&mut t, "a", 1, t0);
    t.renew(a, t0 + Duration::from_secs(60)).unwrap();
    assert!(t.expire(t0 + LEASE).is_empty());
    assert_eq!(t.renew(999, t0), Err(ClientError::StaleClientid));
}

#[test]
fn exchange_id_renews_the_lease_of_an_existing_record() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let a = confirmed_client(&mut t, "a", 1, t0);
    exchange(&mut t, "a", 1, 0, &ROOT, t0 + Duration::from_secs(60)).unwrap();
    assert_eq!(
        t.leases().expires_at(a),
        Some(t0 + Duration::from_secs(150))
    );
}

#[test]
fn auth_sys_principal_is_the_uid_alone() {
    let cred = |machine: &'static str, uid| {
        Credential::Sys(AuthSysParms {
            machinename: nfs_proto::xdr::Utf8String(Bytes::from_static(machine.as_bytes())),
            uid,
            ..Default::default()
        })
    };
    assert_eq!(
        Principal::from_credential(&cred("host-a", 0)),
        Some(Principal::Uid(0))
    );
    assert_eq!(
        Principal::from_credential(&cred("host-a", 5)),
        Principal::from_credential(&cred("other-name", 5))
    );
    assert_eq!(
        Principal::from_credential(&Credential::None),
        Some(Principal::Anonymous)
    );
    assert_eq!(
        Principal::from_credential(&Credential::Gss(Bytes::new())),
        None
    );
}

#[test]
fn exchange_id_result_becomes_the_wire_reply() {
    let t0 = ManualClock::new().now();
    let mut t = table();
    let ok = exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap();
    let res = ok
        .clone()
        .into_res_ok(Default::default(), Bytes::from_static(b"scope"), vec![]);
    assert_eq!(res.eir_clientid, ok.clientid);
    assert_eq!(res.eir_sequenceid, 1);
    assert_eq!(res.eir_server_scope, Bytes::from_static(b"scope"));
}

// ---------------------------------------------------------------------------------------------
// The cap on client records (`max_clients`)
// ---------------------------------------------------------------------------------------------

fn capped(max_clients: usize) -> ClientTable {
    ClientTable::new(ClientTableConfig {
        boot_epoch: 3,
        lease_time: LEASE,
        roles: EXCHGID4_FLAG_USE_PNFS_MDS,
        max_clients,
    })
}

fn new_owner(t: &mut ClientTable, owner: &str, now: Instant) -> Result<ExchangeIdOk, ClientError> {
    let mut a = args("", 1, 0);
    a.eia_clientowner.co_ownerid = Bytes::copy_from_slice(owner.as_bytes());
    t.exchange_id(&a, &ROOT, 1, no_state, now)
}

#[test]
fn a_new_owner_past_the_cap_is_refused_with_delay_when_every_record_is_confirmed() {
    let t0 = ManualClock::new().now();
    let mut t = capped(3);
    for o in ["a", "b", "c"] {
        confirmed_client(&mut t, o, 1, t0);
    }
    assert!(t.is_full());
    let e = new_owner(&mut t, "d", t0).unwrap_err();
    assert_eq!(e, ClientError::NoRoom);
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_DELAY);
    assert_eq!(t.len(), 3, "nothing was given up");
    assert!(t.confirmed_by_owner(b"a").is_some());
}

#[test]
fn a_full_table_gives_up_its_oldest_unconfirmed_record_for_a_new_owner() {
    let t0 = ManualClock::new().now();
    let mut t = capped(3);
    confirmed_client(&mut t, "a", 1, t0);
    let u1 = new_owner(&mut t, "u1", t0).unwrap().clientid;
    let u2 = new_owner(&mut t, "u2", t0).unwrap().clientid;
    let ok = new_owner(&mut t, "d", t0).unwrap();
    assert_eq!(ok.case, ExchangeIdCase::NewOwner);
    let gone: Vec<_> = ok
        .removed
        .iter()
        .map(|r| (r.clientid, r.was_confirmed, r.reason))
        .collect();
    assert_eq!(gone, [(u1, false, RemovalReason::Evicted)]);
    assert!(t.get(u1).is_none(), "u1 must start again (STALE_CLIENTID)");
    assert!(t.get(u2).is_some());
    assert_eq!((t.len(), t.unconfirmed_len()), (3, 2));
    // The evicted client starts again; now u2 is the oldest unconfirmed record.
    let again = new_owner(&mut t, "u1", t0).unwrap();
    assert_eq!(again.removed[0].clientid, u2);
}

#[test]
fn clients_already_known_get_in_past_the_cap() {
    let t0 = ManualClock::new().now();
    let mut t = capped(2);
    let a = confirmed_client(&mut t, "a", 1, t0);
    confirmed_client(&mut t, "b", 1, t0);
    assert_eq!(new_owner(&mut t, "x", t0).unwrap_err(), ClientError::NoRoom);
    // case 2: the same instance again
    let ok = exchange(&mut t, "a", 1, 0, &ROOT, t0).unwrap();
    assert_eq!((ok.case, ok.clientid), (ExchangeIdCase::Existing, a));
    // case 6: an update
    let ok = exchange(&mut t, "a", 1, EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, &ROOT, t0).unwrap();
    assert_eq!(ok.case, ExchangeIdCase::Update);
    // case 5: the client rebooted; its new record goes beside the old one, past the cap
    let ok = exchange(&mut t, "a", 2, 0, &ROOT, t0).unwrap();
    assert_eq!(ok.case, ExchangeIdCase::ClientRestart);
    assert_eq!(t.len(), 3);
    // It retries before CREATE_SESSION: the retry replaces its unconfirmed record.
    let retry = exchange(&mut t, "a", 2, 0, &ROOT, t0).unwrap();
    assert_eq!(retry.case, ExchangeIdCase::ClientRestart);
    assert_ne!(retry.clientid, ok.clientid);
    assert_eq!((t.len(), t.unconfirmed_len()), (3, 1));
    // Confirmed, the new record replaces the old one: back at the cap.
    t.confirm(retry.clientid);
    assert_eq!((t.len(), t.unconfirmed_len()), (2, 0));
    assert_eq!(new_owner(&mut t, "x", t0).unwrap_err(), ClientError::NoRoom);
}

#[test]
fn an_unconfirmed_owner_retrying_in_a_full_table_replaces_its_own_record() {
    let t0 = ManualClock::new().now();
    let mut t = capped(2);
    confirmed_client(&mut t, "a", 1, t0);
    let u = new_owner(&mut t, "u", t0).unwrap().clientid;
    let ok = new_owner(&mut t, "u", t0).unwrap();
    assert_eq!(ok.case, ExchangeIdCase::ReplaceUnconfirmed);
    assert!(ok.removed.is_empty(), "nothing evicted: {:?}", ok.removed);
    assert!(t.get(u).is_none());
    assert_eq!((t.len(), t.unconfirmed_len()), (2, 1));
}

#[test]
fn destroyed_and_expired_records_make_room() {
    let t0 = ManualClock::new().now();
    let mut t = capped(2);
    let a = confirmed_client(&mut t, "a", 1, t0);
    confirmed_client(&mut t, "b", 1, t0 + Duration::from_secs(10));
    assert!(new_owner(&mut t, "x", t0).is_err());
    t.destroy_clientid(a, false).unwrap();
    new_owner(&mut t, "x", t0).unwrap();
    assert!(
        new_owner(&mut t, "y", t0).is_ok(),
        "x was unconfirmed: given up"
    );
    // y is unconfirmed and b confirmed: expiring b (as the caller does when full) makes room.
    let gone = t.expire(t0 + Duration::from_secs(10) + LEASE);
    assert_eq!(gone.len(), 2, "b and y: {gone:?}");
    assert!(t.is_empty());
}
