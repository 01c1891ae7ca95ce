//! The seam between the shared session layer and a server role: [`Role`] (what the MDS and a
//! data server each implement) and [`SessionCtx`] (the part of a COMPOUND's context the
//! engine owns).

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;

#[cfg(doc)]
use nfs_proto::nfs4::NfsOpnum4;
use nfs_proto::nfs4::{Clientid4, NfsArgop4, NfsStat4, OpFlags, OpHandler, Sessionid4};
use nfs_proto::rpc::Credential;
use nfs_proto::transport::{Conn, Reply};

use crate::core::Core;
use crate::state::client::{PersistedClient, Principal, RemovedClient};

/// The uid and gid of the anonymous user (AUTH_NONE, and what root squashing maps uid 0 and
/// gid 0 to).
pub const NOBODY: u32 = 65534;

/// The session-layer part of a COMPOUND's context: who asked, on which connection, in which
/// minor version, and (after SEQUENCE) for which client and session.
pub struct SessionCtx {
    /// The connection the request came on.
    pub conn: Conn,
    /// The principal client records are bound to (RFC 8881 section 2.4.3).
    pub principal: Principal,
    /// The COMPOUND's minor version (1 or 2).
    pub minor: u32,
    /// The client of the session SEQUENCE named.
    pub clientid: Option<Clientid4>,
    /// The session SEQUENCE named.
    pub sessionid: Option<Sessionid4>,
}

impl SessionCtx {
    /// The context of a new COMPOUND, before SEQUENCE.
    pub fn new(conn: Conn, cred: &Credential, minor: u32) -> Self {
        Self {
            conn,
            principal: principal_of(cred),
            minor,
            clientid: None,
            sessionid: None,
        }
    }

    /// The client of the session, which SEQUENCE guarantees for every later operation.
    pub fn client(&self) -> Result<Clientid4, NfsStat4> {
        self.clientid.ok_or(NfsStat4::NFS4ERR_OP_NOT_IN_SESSION)
    }
}

/// The principal a credential stands for, as client records compare it: the AUTH_SYS uid,
/// and for AUTH_NONE the anonymous uid (the caller as the MDS's file permission checks see
/// it, so a record and the files it opens agree on who the caller is). Other flavors never
/// get this far ([`crate::auth_policy`]); were one to, it would be anonymous too.
pub fn principal_of(cred: &Credential) -> Principal {
    match cred {
        Credential::Sys(p) => Principal::Uid(p.uid),
        _ => Principal::Uid(NOBODY),
    }
}

/// A role's per-COMPOUND context: its own state (current filehandle, ...) around the
/// engine's [`SessionCtx`].
pub trait CompoundCtx: Send {
    /// The session-layer part.
    fn session(&self) -> &SessionCtx;
    /// The session-layer part, for the engine to fill in at SEQUENCE.
    fn session_mut(&mut self) -> &mut SessionCtx;

    /// Called once the COMPOUND's operations have run, before its reply is cached and sent:
    /// what they changed must be durable when this returns (the MDS makes its store's
    /// deferred commits durable here, one fsync for the whole COMPOUND). An error means the
    /// changes may not be durable: the engine answers SYSTEM_ERR and acknowledges nothing.
    fn finish(&mut self) -> impl std::future::Future<Output = Result<(), String>> + Send {
        async { Ok(()) }
    }

    /// Called before each operation `op` after SEQUENCE with the operations that follow it
    /// in the COMPOUND: the MDS stops deferring its store's commits at the last one that may
    /// change the store (its commit is then the durable one, and `finish` needs none).
    fn before_op(&mut self, _op: &NfsArgop4, _later: &[NfsArgop4]) {}
}

/// What a server adds to the shared session layer: its own operations, and the hooks where a
/// client's life touches its own state. The MDS implements it over its namespace and open
/// table; a data server over its object store, with hooks that do almost nothing (it keeps
/// no client state beyond sessions, and nothing on disk about clients).
///
/// The engine ([`crate::compound::process`]) runs SEQUENCE and the session operations
/// (EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION, BIND_CONN_TO_SESSION, BACKCHANNEL_CTL,
/// DESTROY_CLIENTID, RECLAIM_COMPLETE) itself; every other operation goes to the role's
/// context as an [`OpHandler`] (its method for the operation, `NFS4ERR_NOTSUPP` where the
/// role writes none), if the op table gives it [`Role::OFFERED`].
pub trait Role: Send + Sync + Sized + 'static {
    /// The per-COMPOUND context of this role's operations, which runs them.
    type Ctx: CompoundCtx + OpHandler;

    /// The flags an operation must have in the op table ([`NfsOpnum4::flags`]) for this
    /// role to run it; any other is `NFS4ERR_NOTSUPP` without asking the role. A data server
    /// offers only [`OpFlags::ON_DS`] operations (RFC 8881 section 13.6).
    const OFFERED: OpFlags = OpFlags::NONE;

    /// The shared session layer of this server.
    fn core(&self) -> &Core;

    /// Starts a COMPOUND whose minor version is supported: the role's context around
    /// `session`, or an RPC-level answer for the whole call (the MDS refuses a client no
    /// export admits with AUTH_TOOWEAK).
    fn begin(self: &Arc<Self>, session: SessionCtx, cred: &Credential) -> Result<Self::Ctx, Reply>;

    /// Whether the client still holds state of this role (opens, locks, delegations,
    /// layouts), for EXCHANGE_ID's collision rule (RFC 8881 section 18.35.5 case 3) and
    /// DESTROY_CLIENTID (section 18.50.3). Called with [`Core::state`] locked: it may take
    /// the role's own locks, never that one.
    fn client_has_state(&self, clientid: Clientid4) -> bool;

    /// The `SEQ4_STATUS_*` bits of the role's own state for SEQUENCE's reply (RFC 8881
    /// section 18.46.3): revoked state the client has not freed yet. Called for every
    /// SEQUENCE, without [`Core::state`] locked, so it must be cheap.
    fn status_flags(&self, clientid: Clientid4) -> u32 {
        let _ = clientid;
        0
    }

    /// Makes a newly confirmed client record durable before the reply that confirms it is
    /// sent (RFC 8881 section 8.4.2.1: the MDS must know after a restart who may reclaim).
    /// A role that runs no grace period keeps nothing.
    fn persist_client(
        &self,
        client: PersistedClient,
    ) -> impl Future<Output = Result<(), NfsStat4>> + Send;

    /// Releases what a removed client held (its sessions are already gone): called after
    /// lease expiry, DESTROY_CLIENTID, or the confirmation of a newer record of its owner.
    fn release_client(self: &Arc<Self>, client: &RemovedClient) -> impl Future<Output = ()> + Send;

    /// Called once by the lease reaper when no grace period runs any more (at start when
    /// there is none), with the owners of the previous boot's clients that did not reclaim
    /// (RFC 8881 section 8.4.3: they may not reclaim after a later restart either): the MDS
    /// forgets their records and deletes the files left open-but-unlinked by its previous
    /// boot.
    fn grace_over(self: &Arc<Self>, unreclaimed: Vec<Bytes>) -> impl Future<Output = ()> + Send {
        let _ = unreclaimed;
        async {}
    }
}
