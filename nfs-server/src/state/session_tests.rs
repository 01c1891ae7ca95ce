//! Tests of sessions: CREATE_SESSION (RFC 8881 section 18.36.4), SEQUENCE (18.46.3),
//! DESTROY_SESSION (18.37.3), BIND_CONN_TO_SESSION (18.34.3), BACKCHANNEL_CTL (18.33.3).

use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::{
    AuthsysParms, ClientOwner4, ExchangeIdArgs, GssCbHandles4, Gsshandle4T, RpcGssSvc,
    StateProtect4A, SEQ4_STATUS_RECALLABLE_STATE_REVOKED,
};
use nfs_proto::session::request_digest;

use super::super::client::{ClientTableConfig, RemovalReason};
use super::*;
use crate::clock::{Clock, ManualClock};

const LEASE: Duration = Duration::from_secs(90);
const KEY: [u8; 32] = [7; 32];
const ROOT: Principal = Principal::Uid(0);
const CONN: ConnId = 100;

struct Setup {
    clients: ClientTable,
    sessions: SessionTable,
    t0: Instant,
}

fn setup() -> Setup {
    Setup {
        clients: ClientTable::new(ClientTableConfig {
            boot_epoch: 2,
            lease_time: LEASE,
            ..Default::default()
        }),
        sessions: SessionTable::new(SessionLimits::default(), KEY),
        t0: ManualClock::new().now(),
    }
}

fn fore_attrs() -> ChannelAttrs4 {
    ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 1 << 20,
        ca_maxresponsesize: 1 << 20,
        ca_maxresponsesize_cached: 8 << 10,
        ca_maxoperations: 16,
        ca_maxrequests: 8,
        ca_rdma_ird: Vec::new(),
    }
}

fn back_attrs() -> ChannelAttrs4 {
    ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 4096,
        ca_maxresponsesize: 4096,
        ca_maxresponsesize_cached: 0,
        ca_maxoperations: 2,
        ca_maxrequests: 1,
        ca_rdma_ird: Vec::new(),
    }
}

fn cs_args(clientid: Clientid4, sequence: u32, flags: u32) -> CreateSessionArgs {
    CreateSessionArgs {
        csa_clientid: clientid,
        csa_sequence: sequence,
        csa_flags: flags,
        csa_fore_chan_attrs: fore_attrs(),
        csa_back_chan_attrs: back_attrs(),
        csa_cb_program: 0x4000_0000,
        csa_sec_parms: vec![CallbackSecParms4::AuthSys(AuthsysParms::default())],
    }
}

impl Setup {
    fn exchange(&mut self, owner: &'static str, verifier: u8) -> Clientid4 {
        let args = ExchangeIdArgs {
            eia_clientowner: ClientOwner4 {
                co_verifier: [verifier; 8],
                co_ownerid: Bytes::from_static(owner.as_bytes()),
            },
            eia_flags: 0,
            eia_state_protect: StateProtect4A::None,
            eia_client_impl_id: Vec::new(),
        };
        self.clients
            .exchange_id(&args, &ROOT, 1, |_| false, self.t0)
            .unwrap()
            .clientid
    }

    fn create(&mut self, args: &CreateSessionArgs) -> Result<CreateSessionOutcome, SessionError> {
        self.sessions
            .create_session(&mut self.clients, args, &ROOT, CONN, self.t0)
    }

    /// A confirmed client with one session (back channel on CONN).
    fn session(&mut self, owner: &'static str) -> (Clientid4, Sessionid4) {
        let id = self.exchange(owner, 1);
        let out = self
            .create(&cs_args(id, 1, CREATE_SESSION4_FLAG_CONN_BACK_CHAN))
            .unwrap();
        (id, out.res.csr_sessionid)
    }

    fn seq(
        &mut self,
        sid: Sessionid4,
        slot: u32,
        seqid: u32,
        conn: ConnId,
    ) -> Result<SequenceOutcome, SessionError> {
        let req = SequenceRequest {
            args: SequenceArgs {
                sa_sessionid: sid,
                sa_sequenceid: seqid,
                sa_slotid: slot,
                sa_highest_slotid: slot,
                sa_cachethis: true,
            },
            digest: request_digest(&[slot as u8, seqid as u8]),
            request_size: 200,
            min_reply_size: 100,
            op_count: 3,
            status_flags: 0,
        };
        self.sessions
            .sequence(&mut self.clients, &req, conn, self.t0)
    }

    fn flags(&mut self, sid: Sessionid4, slot: u32, seqid: u32, conn: ConnId) -> u32 {
        match self.seq(sid, slot, seqid, conn).unwrap() {
            SequenceOutcome::Execute { res, .. } => {
                self.sessions.finish(&sid, slot, vec![], false);
                res.sr_status_flags
            }
            o => panic!("{o:?}"),
        }
    }
}

#[test]
fn create_session_on_unknown_clientid_is_stale_clientid() {
    let mut s = setup();
    let e = s.create(&cs_args(42, 1, 0)).unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_STALE_CLIENTID);
}

#[test]
fn first_create_session_confirms_the_client_and_returns_the_record_to_persist() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let out = s.create(&cs_args(id, 1, 0)).unwrap();
    assert!(!out.replay);
    assert!(matches!(&out.events[..], [ClientEvent::Confirmed(p)] if p.clientid == id));
    assert!(s.clients.confirmed(id).is_ok());
    assert_eq!(out.res.csr_sequence, 1);
    assert!(s
        .clients
        .get(id)
        .unwrap()
        .sessions()
        .contains(&out.res.csr_sessionid));
}

#[test]
fn create_session_on_unconfirmed_record_from_other_principal_is_clid_inuse() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let e = s
        .sessions
        .create_session(
            &mut s.clients,
            &cs_args(id, 1, 0),
            &Principal::Uid(5),
            CONN,
            s.t0,
        )
        .unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_CLID_INUSE);
}

#[test]
fn create_session_retry_with_same_sequence_replays_the_cached_reply() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let first = s.create(&cs_args(id, 1, 0)).unwrap();
    let again = s.create(&cs_args(id, 1, 0)).unwrap();
    assert!(again.replay);
    assert!(again.events.is_empty());
    assert_eq!(again.res, first.res);
    assert_eq!(s.sessions.len(), 1, "no second session");
}

#[test]
fn create_session_with_other_sequence_is_seq_misordered() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    for bad in [0, 2, 7] {
        let e = s.create(&cs_args(id, bad, 0)).unwrap_err();
        assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_SEQ_MISORDERED, "{bad}");
    }
    s.create(&cs_args(id, 1, 0)).unwrap();
    assert_eq!(
        s.create(&cs_args(id, 3, 0)).unwrap_err(),
        SessionError::Slot(SlotError::SeqMisordered)
    );
}

#[test]
fn second_create_session_uses_the_next_sequence_and_confirms_nothing() {
    let mut s = setup();
    let (id, first) = s.session("a");
    let out = s.create(&cs_args(id, 2, 0)).unwrap();
    assert!(out.events.is_empty());
    assert_ne!(out.res.csr_sessionid, first);
    assert_eq!(s.clients.get(id).unwrap().sessions().len(), 2);
}

#[test]
fn session_id_is_clientid_counter_and_mac() {
    let mut s = setup();
    let (id, sid) = s.session("a");
    assert_eq!(&sid[..8], &id.to_be_bytes());
    assert_eq!(&sid[8..12], &0u32.to_be_bytes());
    let mac = blake3::keyed_hash(&KEY, &sid[..12]);
    assert_eq!(&sid[12..], &mac.as_bytes()[..4]);
    let second = s.create(&cs_args(id, 2, 0)).unwrap().res.csr_sessionid;
    assert_eq!(&second[8..12], &1u32.to_be_bytes());
}

#[test]
fn fore_channel_is_negotiated_within_server_limits() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let mut args = cs_args(id, 1, 0);
    args.csa_fore_chan_attrs = ChannelAttrs4 {
        ca_headerpadsize: 512,
        ca_maxrequestsize: u32::MAX,
        ca_maxresponsesize: u32::MAX,
        ca_maxresponsesize_cached: u32::MAX,
        ca_maxoperations: 1000,
        ca_maxrequests: 5000,
        ca_rdma_ird: vec![4],
    };
    let fore = s.create(&args).unwrap().res.csr_fore_chan_attrs;
    let l = SessionLimits::default();
    assert_eq!(
        fore,
        ChannelAttrs4 {
            ca_headerpadsize: 0,
            ca_maxrequestsize: l.max_request_size,
            ca_maxresponsesize: l.max_response_size,
            ca_maxresponsesize_cached: l.max_response_size_cached,
            ca_maxoperations: l.max_operations,
            ca_maxrequests: l.max_requests,
            ca_rdma_ird: vec![],
        }
    );
}

#[test]
fn fore_channel_smaller_than_the_server_keeps_the_client_values() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let out = s.create(&cs_args(id, 1, 0)).unwrap();
    assert_eq!(out.res.csr_fore_chan_attrs, fore_attrs());
    let session = s.sessions.get(&out.res.csr_sessionid).unwrap();
    assert_eq!(session.slots().max_slots(), 8);
}

#[test]
fn fore_channel_too_small_is_toosmall_and_zero_slots_inval() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let mut args = cs_args(id, 1, 0);
    args.csa_fore_chan_attrs.ca_maxresponsesize = 100;
    assert_eq!(
        NfsStat4::from(s.create(&args).unwrap_err()),
        NfsStat4::NFS4ERR_TOOSMALL
    );
    let mut args = cs_args(id, 1, 0);
    args.csa_fore_chan_attrs.ca_maxrequests = 0;
    assert_eq!(
        NfsStat4::from(s.create(&args).unwrap_err()),
        NfsStat4::NFS4ERR_INVAL
    );
    // failures are not cached: the same sequence still creates the session
    assert!(!s.create(&cs_args(id, 1, 0)).unwrap().replay);
}

#[test]
fn back_channel_is_accepted_as_sent_within_limits() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let mut args = cs_args(id, 1, 0);
    args.csa_back_chan_attrs.ca_maxrequests = 1000;
    args.csa_back_chan_attrs.ca_headerpadsize = 64;
    args.csa_back_chan_attrs.ca_maxresponsesize_cached = 2048;
    let back = s.create(&args).unwrap().res.csr_back_chan_attrs;
    assert_eq!(
        back.ca_maxrequests,
        SessionLimits::default().max_back_requests
    );
    assert_eq!(back.ca_headerpadsize, 0);
    assert_eq!(back.ca_maxrequestsize, 4096);
    assert_eq!(back.ca_maxresponsesize_cached, 2048);
}

#[test]
fn back_channel_too_small_for_a_recall_is_toosmall() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    for shrink in [
        |a: &mut ChannelAttrs4| a.ca_maxrequestsize = 100,
        |a: &mut ChannelAttrs4| a.ca_maxresponsesize = 10,
        |a: &mut ChannelAttrs4| a.ca_maxoperations = 1,
    ] {
        let mut args = cs_args(id, 1, 0);
        shrink(&mut args.csa_back_chan_attrs);
        assert_eq!(s.create(&args).unwrap_err(), SessionError::TooSmall);
    }
}

#[test]
fn persist_and_rdma_are_never_granted_back_channel_is() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let all = CREATE_SESSION4_FLAG_PERSIST
        | CREATE_SESSION4_FLAG_CONN_BACK_CHAN
        | CREATE_SESSION4_FLAG_CONN_RDMA;
    let out = s.create(&cs_args(id, 1, all)).unwrap();
    assert_eq!(out.res.csr_flags, CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
    let session = s.sessions.get(&out.res.csr_sessionid).unwrap();
    assert_eq!(session.fore_conns(), &[CONN]);
    assert_eq!(session.back_channel_conn(), Some(CONN));
}

#[test]
fn without_conn_back_chan_the_connection_is_fore_only() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let out = s.create(&cs_args(id, 1, 0)).unwrap();
    assert_eq!(out.res.csr_flags, 0);
    let session = s.sessions.get(&out.res.csr_sessionid).unwrap();
    assert_eq!(session.back_channel_conn(), None);
}

#[test]
fn undefined_create_session_flags_are_inval() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    assert_eq!(
        s.create(&cs_args(id, 1, 0x10)).unwrap_err(),
        SessionError::Inval
    );
}

fn gss_only() -> Vec<CallbackSecParms4> {
    vec![CallbackSecParms4::RpcsecGss(GssCbHandles4 {
        gcbp_service: RpcGssSvc::RPC_GSS_SVC_NONE,
        gcbp_handle_from_server: Gsshandle4T::default(),
        gcbp_handle_from_client: Gsshandle4T::default(),
    })]
}

#[test]
fn no_usable_callback_security_is_encr_alg_unsupp() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let mut args = cs_args(id, 1, 0);
    args.csa_sec_parms = gss_only();
    let e = s.create(&args).unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_ENCR_ALG_UNSUPP);
    args.csa_sec_parms = vec![CallbackSecParms4::AuthNone];
    let out = s.create(&args).unwrap();
    let session = s.sessions.get(&out.res.csr_sessionid).unwrap();
    assert_eq!(session.cb_sec_parms(), &[CallbackSecParms4::AuthNone]);
    assert_eq!(session.cb_program(), 0x4000_0000);
}

#[test]
fn confirming_a_restarted_client_drops_the_old_clients_sessions() {
    let mut s = setup();
    let (old, old_sid) = s.session("a");
    let new = s.exchange("a", 2);
    let out = s.create(&cs_args(new, 1, 0)).unwrap();
    match &out.events[..] {
        [ClientEvent::Removed(r), ClientEvent::Confirmed(p)] => {
            assert_eq!((r.clientid, r.reason), (old, RemovalReason::Replaced));
            assert_eq!(p.clientid, new);
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(
        s.sessions.get(&old_sid).unwrap_err(),
        SessionError::BadSession
    );
    assert_eq!(
        s.seq(old_sid, 0, 1, CONN).unwrap_err(),
        SessionError::BadSession
    );
}

#[test]
fn sequence_on_unknown_session_is_badsession() {
    let mut s = setup();
    let e = s.seq([3; 16], 0, 1, CONN).unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_BADSESSION);
}

#[test]
fn sequence_executes_new_request_and_renews_the_lease() {
    let mut s = setup();
    let (id, sid) = s.session("a");
    s.t0 += Duration::from_secs(60);
    match s.seq(sid, 2, 1, CONN).unwrap() {
        SequenceOutcome::Execute {
            res,
            clientid,
            reply_limit,
        } => {
            assert_eq!(clientid, id);
            assert_eq!(
                reply_limit,
                ReplyLimit {
                    max: 8 << 10,
                    cached: true
                },
                "sa_cachethis: the cache's limit"
            );
            assert_eq!(
                (res.sr_sessionid, res.sr_slotid, res.sr_sequenceid),
                (sid, 2, 1)
            );
            assert_eq!(res.sr_highest_slotid, 7);
            assert_eq!(res.sr_target_highest_slotid, 7);
            assert_eq!(res.sr_status_flags, 0);
        }
        o => panic!("{o:?}"),
    }
    assert_eq!(s.clients.leases().expires_at(id), Some(s.t0 + LEASE));
}

#[test]
fn sequence_retry_gets_the_cached_reply() {
    let mut s = setup();
    let (_, sid) = s.session("a");
    s.seq(sid, 0, 1, CONN).unwrap();
    let reply = vec![Bytes::from_static(b"compound reply")];
    assert!(s.sessions.finish(&sid, 0, reply.clone(), true));
    assert_eq!(
        s.seq(sid, 0, 1, CONN).unwrap(),
        SequenceOutcome::Replay(reply)
    );
}

#[test]
fn sequence_slot_errors_become_their_status() {
    let mut s = setup();
    let (_, sid) = s.session("a");
    let e = s.seq(sid, 8, 1, CONN).unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_BADSLOT);
    s.seq(sid, 0, 1, CONN).unwrap();
    let e = s.seq(sid, 0, 1, CONN).unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_DELAY);
    let e = s.seq(sid, 0, 5, CONN).unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_SEQ_MISORDERED);
}

#[test]
fn compound_beyond_session_limits_is_too_many_ops_or_req_too_big() {
    let mut s = setup();
    let (_, sid) = s.session("a");
    let mut req = SequenceRequest {
        args: SequenceArgs {
            sa_sessionid: sid,
            sa_sequenceid: 1,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: false,
        },
        digest: 0,
        request_size: 100,
        min_reply_size: 100,
        op_count: 17,
        status_flags: 0,
    };
    let e = s
        .sessions
        .sequence(&mut s.clients, &req, CONN, s.t0)
        .unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_TOO_MANY_OPS);
    req.op_count = 2;
    req.request_size = (1 << 20) + 1;
    let e = s
        .sessions
        .sequence(&mut s.clients, &req, CONN, s.t0)
        .unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_REQ_TOO_BIG);
    req.request_size = 100;
    assert!(
        s.sessions
            .sequence(&mut s.clients, &req, CONN, s.t0)
            .is_ok(),
        "slot untouched"
    );
}

#[test]
fn a_reply_that_cannot_hold_even_sequence_is_rep_too_big_and_leaves_the_slot() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let mut args = cs_args(id, 1, 0);
    args.csa_fore_chan_attrs.ca_maxresponsesize = 300;
    args.csa_fore_chan_attrs.ca_maxresponsesize_cached = 10;
    let sid = s.create(&args).unwrap().res.csr_sessionid;
    let mut req = SequenceRequest {
        args: SequenceArgs {
            sa_sessionid: sid,
            sa_sequenceid: 1,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: true,
        },
        digest: 0,
        request_size: 100,
        min_reply_size: 100,
        op_count: 2,
        status_flags: 0,
    };
    let e = s
        .sessions
        .sequence(&mut s.clients, &req, CONN, s.t0)
        .unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_REP_TOO_BIG_TO_CACHE);
    req.args.sa_cachethis = false;
    req.min_reply_size = 301;
    let e = s
        .sessions
        .sequence(&mut s.clients, &req, CONN, s.t0)
        .unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_REP_TOO_BIG);
    req.min_reply_size = 100;
    match s
        .sessions
        .sequence(&mut s.clients, &req, CONN, s.t0)
        .unwrap()
    {
        SequenceOutcome::Execute {
            res, reply_limit, ..
        } => {
            assert_eq!(res.sr_sequenceid, 1, "the slot was left as it was");
            assert_eq!(
                reply_limit,
                ReplyLimit {
                    max: 300,
                    cached: false
                }
            );
            assert_eq!(reply_limit.error(), NfsStat4::NFS4ERR_REP_TOO_BIG);
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn sequence_on_a_new_connection_binds_it_to_the_fore_channel() {
    let mut s = setup();
    let (_, sid) = s.session("a");
    s.flags(sid, 0, 1, 200);
    assert_eq!(s.sessions.get(&sid).unwrap().fore_conns(), &[CONN, 200]);
    assert_eq!(s.sessions.get(&sid).unwrap().back_conns(), &[CONN]);
}

#[test]
fn no_back_channel_anywhere_is_cb_path_down() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let sid = s.create(&cs_args(id, 1, 0)).unwrap().res.csr_sessionid;
    assert_eq!(s.flags(sid, 0, 1, CONN), SEQ4_STATUS_CB_PATH_DOWN);
}

#[test]
fn closed_back_channel_connection_is_cb_path_down_and_session() {
    let mut s = setup();
    let (_, sid) = s.session("a");
    s.sessions.connection_closed(CONN);
    assert!(s.sessions.get(&sid).unwrap().fore_conns().is_empty());
    assert_eq!(
        s.flags(sid, 0, 1, 300),
        SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION
    );
}

#[test]
fn other_session_with_back_channel_leaves_only_cb_path_down_session() {
    let mut s = setup();
    let (id, first) = s.session("a");
    let second = s
        .sessions
        .create_session(
            &mut s.clients,
            &cs_args(id, 2, CREATE_SESSION4_FLAG_CONN_BACK_CHAN),
            &ROOT,
            500,
            s.t0,
        )
        .unwrap()
        .res
        .csr_sessionid;
    s.sessions.set_back_channel_down(&first, true).unwrap();
    assert_eq!(s.flags(first, 0, 1, CONN), SEQ4_STATUS_CB_PATH_DOWN_SESSION);
    assert_eq!(s.flags(second, 0, 1, 500), 0);
    let (via, conn) = s.sessions.callback_path(&s.clients, id).unwrap();
    assert_eq!((via.id(), conn), (&second, 500));
}

#[test]
fn bind_conn_to_session_back_channel_clears_path_down() {
    let mut s = setup();
    let (_, sid) = s.session("a");
    s.sessions.set_back_channel_down(&sid, true).unwrap();
    assert_eq!(
        s.flags(sid, 0, 1, CONN) & SEQ4_STATUS_CB_PATH_DOWN,
        SEQ4_STATUS_CB_PATH_DOWN
    );
    let res = s
        .sessions
        .bind_conn_to_session(
            &mut s.clients,
            &BindConnToSessionArgs {
                bctsa_sessid: sid,
                bctsa_dir: ChannelDirFromClient4::CDFC4_BACK_OR_BOTH,
                bctsa_use_conn_in_rdma_mode: true,
            },
            600,
            s.t0,
        )
        .unwrap();
    assert_eq!(res.bctsr_dir, ChannelDirFromServer4::CDFS4_BOTH);
    assert!(!res.bctsr_use_conn_in_rdma_mode);
    assert_eq!(s.flags(sid, 0, 2, CONN), 0);
    assert_eq!(s.sessions.get(&sid).unwrap().back_channel_conn(), Some(600));
}

#[test]
fn bind_conn_to_session_directions() {
    let mut s = setup();
    let (_, sid) = s.session("a");
    let mut bind = |dir, conn| {
        s.sessions.bind_conn_to_session(
            &mut s.clients,
            &BindConnToSessionArgs {
                bctsa_sessid: sid,
                bctsa_dir: dir,
                bctsa_use_conn_in_rdma_mode: false,
            },
            conn,
            s.t0,
        )
    };
    assert_eq!(
        bind(ChannelDirFromClient4::CDFC4_FORE, 1)
            .unwrap()
            .bctsr_dir,
        ChannelDirFromServer4::CDFS4_FORE
    );
    assert_eq!(
        bind(ChannelDirFromClient4::CDFC4_BACK, 2)
            .unwrap()
            .bctsr_dir,
        ChannelDirFromServer4::CDFS4_BACK
    );
    assert_eq!(
        bind(ChannelDirFromClient4::CDFC4_FORE_OR_BOTH, 3)
            .unwrap()
            .bctsr_dir,
        ChannelDirFromServer4::CDFS4_BOTH
    );
    assert_eq!(
        bind(ChannelDirFromClient4(9), 4).unwrap_err(),
        SessionError::Inval
    );
    // rebinding connection 3 to the fore channel only takes it off the back channel
    bind(ChannelDirFromClient4::CDFC4_FORE, 3).unwrap();
    let session = s.sessions.get(&sid).unwrap();
    assert_eq!(session.fore_conns(), &[CONN, 1, 3]);
    assert_eq!(session.back_conns(), &[CONN, 2]);
    assert_eq!(session.back_channel_conn(), Some(2));
}

#[test]
fn bind_conn_to_unknown_session_is_badsession() {
    let mut s = setup();
    let e = s
        .sessions
        .bind_conn_to_session(
            &mut s.clients,
            &BindConnToSessionArgs {
                bctsa_sessid: [1; 16],
                bctsa_dir: ChannelDirFromClient4::CDFC4_FORE,
                bctsa_use_conn_in_rdma_mode: false,
            },
            1,
            s.t0,
        )
        .unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_BADSESSION);
}

#[test]
fn caller_status_flags_are_added() {
    let mut s = setup();
    let (_, sid) = s.session("a");
    let req = SequenceRequest {
        args: SequenceArgs {
            sa_sessionid: sid,
            sa_sequenceid: 1,
            ..Default::default()
        },
        digest: 0,
        request_size: 100,
        min_reply_size: 100,
        op_count: 1,
        status_flags: SEQ4_STATUS_RECALLABLE_STATE_REVOKED,
    };
    match s
        .sessions
        .sequence(&mut s.clients, &req, CONN, s.t0)
        .unwrap()
    {
        SequenceOutcome::Execute { res, .. } => {
            assert_eq!(res.sr_status_flags, SEQ4_STATUS_RECALLABLE_STATE_REVOKED)
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn destroy_session_removes_it_and_lets_destroy_clientid_proceed() {
    let mut s = setup();
    let (id, sid) = s.session("a");
    assert_eq!(
        s.clients.destroy_clientid(id, false),
        Err(ClientError::ClientidBusy)
    );
    s.sessions
        .destroy_session(&mut s.clients, &sid, false)
        .unwrap();
    assert_eq!(s.sessions.get(&sid).unwrap_err(), SessionError::BadSession);
    assert_eq!(
        s.sessions.destroy_session(&mut s.clients, &sid, false),
        Err(SessionError::BadSession)
    );
    assert!(s.clients.destroy_clientid(id, false).is_ok());
}

#[test]
fn destroy_session_with_other_requests_running_is_delay() {
    let mut s = setup();
    let (_, sid) = s.session("a");
    s.seq(sid, 0, 1, CONN).unwrap();
    // from another session's compound, the running request blocks it
    let e = s
        .sessions
        .destroy_session(&mut s.clients, &sid, false)
        .unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_DELAY);
    // from its own compound, that request is the destroyer
    s.sessions
        .destroy_session(&mut s.clients, &sid, true)
        .unwrap();
    assert!(
        !s.sessions.finish(&sid, 0, vec![], true),
        "finish after destroy is harmless"
    );
}

#[test]
fn an_empty_callback_security_list_means_auth_none() {
    let mut s = setup();
    let id = s.exchange("a", 1);
    let mut args = cs_args(id, 1, 0);
    args.csa_sec_parms.clear();
    let out = s.create(&args).unwrap();
    let sid = out.res.csr_sessionid;
    let session = s.sessions.get(&sid).unwrap();
    assert_eq!(session.cb_sec_parms(), &[CallbackSecParms4::AuthNone]);
    s.sessions.backchannel_ctl(&sid, 5, &[]).unwrap();
    let session = s.sessions.get(&sid).unwrap();
    assert_eq!(session.cb_sec_parms(), &[CallbackSecParms4::AuthNone]);
}

#[test]
fn backchannel_ctl_replaces_program_and_security() {
    let mut s = setup();
    let (_, sid) = s.session("a");
    s.sessions
        .backchannel_ctl(&sid, 77, &[CallbackSecParms4::AuthNone])
        .unwrap();
    let session = s.sessions.get(&sid).unwrap();
    assert_eq!(session.cb_program(), 77);
    assert_eq!(session.cb_sec_parms(), &[CallbackSecParms4::AuthNone]);
    assert_eq!(
        s.sessions.backchannel_ctl(&sid, 1, &gss_only()),
        Err(SessionError::EncrAlgUnsupp)
    );
    assert_eq!(
        s.sessions
            .backchannel_ctl(&[0; 16], 1, &[CallbackSecParms4::AuthNone]),
        Err(SessionError::BadSession)
    );
}

#[test]
fn expired_clients_lose_their_sessions() {
    let mut s = setup();
    let (id, sid) = s.session("a");
    let (_, other) = s.session("b");
    s.seq(other, 0, 1, CONN).unwrap();
    s.sessions.finish(&other, 0, vec![], false);
    let later = s.t0 + LEASE;
    // b renews just before a's lease runs out
    s.t0 += LEASE - Duration::from_secs(1);
    s.seq(other, 0, 2, CONN).unwrap();
    let gone = s.sessions.expire(&mut s.clients, later);
    assert_eq!(gone.len(), 1);
    assert_eq!(
        (gone[0].clientid, gone[0].sessions.clone()),
        (id, vec![sid])
    );
    assert_eq!(s.sessions.get(&sid).unwrap_err(), SessionError::BadSession);
    assert!(s.sessions.get(&other).is_ok());
}

#[test]
fn lowered_target_is_reported_in_sequence() {
    let mut s = setup();
    let (_, sid) = s.session("a");
    s.sessions
        .get_mut(&sid)
        .unwrap()
        .slots_mut()
        .set_target_highest_slotid(1);
    match s.seq(sid, 0, 1, CONN).unwrap() {
        SequenceOutcome::Execute { res, .. } => {
            assert_eq!(
                (res.sr_highest_slotid, res.sr_target_highest_slotid),
                (7, 1)
            )
        }
        o => panic!("{o:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The caps on sessions (`max_sessions`, `max_sessions_per_client`)
// ---------------------------------------------------------------------------------------------

fn capped(max_sessions: usize, per_client: usize) -> Setup {
    let mut s = setup();
    s.sessions = SessionTable::new(
        SessionLimits {
            max_sessions,
            max_sessions_per_client: per_client,
            ..SessionLimits::default()
        },
        KEY,
    );
    s
}

/// Another session for a confirmed client, on its CREATE_SESSION sequence `seq`.
fn another(s: &mut Setup, id: Clientid4, seq: u32) -> Result<Sessionid4, SessionError> {
    s.create(&cs_args(id, seq, 0)).map(|o| o.res.csr_sessionid)
}

#[test]
fn a_client_past_its_own_session_cap_gets_delay_and_may_retry_the_same_sequence() {
    let mut s = capped(100, 3);
    let (id, _) = s.session("a");
    another(&mut s, id, 2).unwrap();
    another(&mut s, id, 3).unwrap();
    let e = another(&mut s, id, 4).unwrap_err();
    assert_eq!(e, SessionError::NoRoom);
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_DELAY);
    assert_eq!(s.clients.get(id).unwrap().sessions().len(), 3);
    // The refusal was not cached: after a DESTROY_SESSION the same sequence succeeds.
    let first = *s.clients.get(id).unwrap().sessions().first().unwrap();
    s.sessions
        .destroy_session(&mut s.clients, &first, false)
        .unwrap();
    another(&mut s, id, 4).unwrap();
}

#[test]
fn the_table_wide_cap_refuses_second_sessions_but_never_a_first() {
    let mut s = capped(2, 16);
    let (a, _) = s.session("a");
    let (_, b_sid) = s.session("b");
    assert!(s.sessions.is_full());
    assert_eq!(another(&mut s, a, 2).unwrap_err(), SessionError::NoRoom);
    // A new client's first CREATE_SESSION (its confirmation) is not refused.
    let (c, _) = s.session("c");
    assert_eq!(s.sessions.len(), 3);
    assert!(s.clients.confirmed(c).is_ok());
    // A client that lost its session gets a new one.
    s.sessions
        .destroy_session(&mut s.clients, &b_sid, false)
        .unwrap();
    let b = s.clients.confirmed_by_owner(b"b").unwrap().clientid();
    let b_sid = another(&mut s, b, 2).unwrap();
    assert_eq!(s.sessions.len(), 3);
    // Below the cap again, a second session is allowed.
    let c_sid = *s.clients.get(c).unwrap().sessions().first().unwrap();
    for sid in [b_sid, c_sid] {
        s.sessions
            .destroy_session(&mut s.clients, &sid, false)
            .unwrap();
    }
    another(&mut s, a, 2).unwrap();
}

#[test]
fn bind_conn_to_session_is_never_refused_at_the_caps() {
    let mut s = capped(1, 1);
    let (_, sid) = s.session("a");
    assert!(s.sessions.is_full());
    let r = s
        .sessions
        .bind_conn_to_session(
            &mut s.clients,
            &BindConnToSessionArgs {
                bctsa_sessid: sid,
                bctsa_dir: ChannelDirFromClient4::CDFC4_FORE_OR_BOTH,
                bctsa_use_conn_in_rdma_mode: false,
            },
            CONN + 1,
            s.t0,
        )
        .unwrap();
    assert_eq!(r.bctsr_dir, ChannelDirFromServer4::CDFS4_BOTH);
}

#[test]
fn expiring_clients_frees_their_sessions() {
    let mut s = capped(1, 16);
    let (a, _) = s.session("a");
    s.session("b");
    assert!(s.sessions.is_full());
    let gone = s.sessions.expire(&mut s.clients, s.t0 + LEASE);
    assert_eq!(gone.len(), 2);
    assert!(s.sessions.is_empty() && !s.sessions.is_full());
    assert!(s.clients.get(a).is_none());
}
