//! Client records and EXCHANGE_ID (RFC 8881 section 18.35), confirmation by the first
//! CREATE_SESSION, DESTROY_CLIENTID (section 18.50), and the clients' leases.
//!
//! ```text
//!  EXCHANGE_ID ──> unconfirmed record ──CREATE_SESSION──> confirmed record ──> persisted
//!                  (new clientid,                        (replaces an older confirmed
//!                   eir_sequenceid 1)                     record of the same owner)
//!  lease runs out / DESTROY_CLIENTID ──> record removed ──> caller drops state + store record
//! ```
//!
//! A client id is the boot epoch in the high 16 bits and a per-boot counter in the low 48
//! bits, so ids of an earlier boot are never found again: `NFS4ERR_STALE_CLIENTID`.
//!
//! Sans-IO and no store: what must be written to the metadata store comes back as
//! [`ClientEvent`]s, in the order they must be applied.
//!
//! **Principals.** A record remembers the principal that created it. For AUTH_SYS the
//! principal is the uid alone ([`Principal::Uid`]), not `uid@machinename`: AUTH_SYS proves
//! nothing, so the machine name would add no security, while it does vary for one client (the
//! Linux client writes the UTS nodename of the network namespace that opened each RPC
//! transport, and it may be truncated or change); knfsd likewise ignores it. RPCSEC_GSS
//! principals, once supported, are [`Principal::Named`].
//!
//! **The cap on records** ([`ClientTableConfig::max_clients`]). Only a new owner (case 1 of
//! RFC 8881 section 18.35.5) makes the table grow for good, so only it is checked: a full
//! table first gives up its oldest unconfirmed record (it holds no state and no session;
//! its client gets `NFS4ERR_STALE_CLIENTID` at CREATE_SESSION and starts again), and with
//! none left the EXCHANGE_ID is refused with `NFS4ERR_DELAY` ([`ClientError::NoRoom`]). A
//! client that already has a record is never refused: its EXCHANGE_ID is case 2 or 6, a
//! retry replaces its own unconfirmed record (case 4), and its restart (case 5) adds one
//! unconfirmed record beside its confirmed one, at most one per confirmed owner, so the table
//! never holds more than twice the cap. Expired clients are the caller's to reap before
//! (their state must be released): see `session_ops::exchange_id`.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::{
    Clientid4, CreateSessionResOk, ExchangeIdArgs, ExchangeIdResOk, NfsImplId4, NfsStat4,
    Sequenceid4, ServerOwner4, Sessionid4, StateProtect4A, StateProtect4R, Verifier4,
    EXCHGID4_FLAG_BIND_PRINC_STATEID, EXCHGID4_FLAG_CONFIRMED_R, EXCHGID4_FLAG_MASK_PNFS,
    EXCHGID4_FLAG_SUPP_FENCE_OPS, EXCHGID4_FLAG_SUPP_MOVED_MIGR, EXCHGID4_FLAG_SUPP_MOVED_REFER,
    EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, EXCHGID4_FLAG_USE_PNFS_MDS,
};
use nfs_proto::rpc::Credential;
use nfs_proto::session::CreateSessionSlot;
use serde::{Deserialize, Serialize};

use super::lease::Leases;

/// Who sent a request, as far as client records care (RFC 8881 section 2.4.3).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Principal {
    /// AUTH_NONE.
    Anonymous,
    /// AUTH_SYS: the uid alone (see the module documentation for why not the machine name).
    Uid(u32),
    /// An authenticated principal name (RPCSEC_GSS, when supported).
    Named(Vec<u8>),
}

impl Principal {
    /// The principal of a call's credential; `None` for flavors whose principal the RPC layer
    /// must establish itself (RPCSEC_GSS) or that the server does not accept.
    pub fn from_credential(cred: &Credential) -> Option<Self> {
        match cred {
            Credential::None => Some(Self::Anonymous),
            Credential::Sys(p) => Some(Self::Uid(p.uid)),
            Credential::Gss(_) | Credential::Other(..) => None,
        }
    }
}

/// Why a client operation failed; each variant is one `nfsstat4`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ClientError {
    /// The client id is unknown: from an earlier boot, expired, or destroyed.
    #[error("unknown or stale client id")]
    StaleClientid,
    /// The owner id belongs to a client of another principal that still holds state
    /// (RFC 8881 section 18.35.5, case 3), or CREATE_SESSION on an unconfirmed record came
    /// from another principal (section 18.36.4).
    #[error("client owner in use by another principal")]
    ClidInUse,
    /// An update of a confirmed record by another principal (section 18.35.5, case 9).
    #[error("update of a client record by another principal")]
    Perm,
    /// An update of a confirmed record with another verifier (section 18.35.5, case 8).
    #[error("update with a different verifier")]
    NotSame,
    /// An update of a record that is not confirmed (section 18.35.5, case 7).
    #[error("update of an unknown client record")]
    NoEnt,
    /// Undefined or contradictory flags, or unsupported machine-credential protection.
    #[error("invalid EXCHANGE_ID arguments")]
    Inval,
    /// SSV state protection, which this server does not offer.
    #[error("SSV state protection not supported")]
    EncrAlgUnsupp,
    /// DESTROY_CLIENTID while the client still has sessions or state (section 18.50.3).
    #[error("client still has sessions or state")]
    ClientidBusy,
    /// All 2^48 client ids of this boot are used.
    #[error("client ids of this boot exhausted")]
    Exhausted,
    /// The table holds [`ClientTableConfig::max_clients`] records and none could be given up
    /// for a new owner.
    ///
    /// `NFS4ERR_DELAY`: "the replier could not process this operation in what was deemed a
    /// reasonable time; the client should wait and then try the request" (RFC 8881 section
    /// 15.1.1.3), and room comes back as leases run out. It is in EXCHANGE_ID's list of
    /// errors (section 15.2); `NFS4ERR_RESOURCE` is not (a minor version 0 error), and
    /// `NFS4ERR_SERVERFAULT` would tell the client to give up. knfsd answers the same
    /// (`nfserr_jukebox`) when its client count reaches `nfs4_max_clients`.
    #[error("too many client records")]
    NoRoom,
}

impl From<ClientError> for NfsStat4 {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::StaleClientid => NfsStat4::NFS4ERR_STALE_CLIENTID,
            ClientError::ClidInUse => NfsStat4::NFS4ERR_CLID_INUSE,
            ClientError::Perm => NfsStat4::NFS4ERR_PERM,
            ClientError::NotSame => NfsStat4::NFS4ERR_NOT_SAME,
            ClientError::NoEnt => NfsStat4::NFS4ERR_NOENT,
            ClientError::Inval => NfsStat4::NFS4ERR_INVAL,
            ClientError::EncrAlgUnsupp => NfsStat4::NFS4ERR_ENCR_ALG_UNSUPP,
            ClientError::ClientidBusy => NfsStat4::NFS4ERR_CLIENTID_BUSY,
            ClientError::Exhausted => NfsStat4::NFS4ERR_SERVERFAULT,
            ClientError::NoRoom => NfsStat4::NFS4ERR_DELAY,
        }
    }
}

/// Which case of RFC 8881 section 18.35.5 an EXCHANGE_ID was.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ExchangeIdCase {
    /// Case 1: no record of this owner; a new unconfirmed record.
    NewOwner,
    /// Case 2: a confirmed record with the same verifier and principal; returned unchanged.
    Existing,
    /// Case 3: a confirmed record of another principal without state (or whose lease ran
    /// out); that record is removed and a new unconfirmed record made.
    CollisionReplaced,
    /// Case 4: only an unconfirmed record of this owner; replaced by a new one.
    ReplaceUnconfirmed,
    /// Case 5: a confirmed record with another verifier (the client rebooted); a new
    /// unconfirmed record replaces it once confirmed.
    ClientRestart,
    /// Case 6: an update of a confirmed record.
    Update,
}

/// A successful EXCHANGE_ID: the client-dependent part of `EXCHANGE_ID4resok`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ExchangeIdOk {
    /// `eir_clientid`.
    pub clientid: Clientid4,
    /// `eir_sequenceid`: the `csa_sequence` of the next CREATE_SESSION.
    pub sequenceid: Sequenceid4,
    /// `eir_flags`, `EXCHGID4_FLAG_CONFIRMED_R` included when the record is confirmed.
    pub flags: u32,
    /// `eir_state_protect`.
    pub state_protect: StateProtect4R,
    /// The RFC case, for logs and tests.
    pub case: ExchangeIdCase,
    /// Records removed on the way: the confirmed record of another principal that a case 3
    /// collision replaced, or the unconfirmed records given up to make room for a new owner.
    /// The caller drops their sessions and state, and their store records.
    pub removed: Vec<RemovedClient>,
}

impl ExchangeIdOk {
    /// The full reply, with the server's identity added.
    pub fn into_res_ok(
        self,
        server_owner: ServerOwner4,
        server_scope: Bytes,
        server_impl_id: Vec<NfsImplId4>,
    ) -> ExchangeIdResOk {
        ExchangeIdResOk {
            eir_clientid: self.clientid,
            eir_sequenceid: self.sequenceid,
            eir_flags: self.flags,
            eir_state_protect: self.state_protect,
            eir_server_owner: server_owner,
            eir_server_scope: server_scope,
            eir_server_impl_id: server_impl_id,
        }
    }
}

/// What the metadata store keeps of a confirmed client, so that after a restart the server
/// knows which owners may reclaim (RFC 8881 section 8.4.2.1).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PersistedClient {
    /// The client id of the boot that confirmed it (its epoch tells which boot).
    pub clientid: Clientid4,
    /// `co_ownerid`: the key that survives restarts.
    pub ownerid: Vec<u8>,
    /// `co_verifier` of the client instance.
    pub verifier: Verifier4,
    /// The principal that created the record.
    pub principal: Principal,
}

/// Why a client record was removed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RemovalReason {
    /// The lease ran out.
    Expired,
    /// DESTROY_CLIENTID.
    Destroyed,
    /// A newer record of the same owner was confirmed (client restart, or a collision with a
    /// stateless record).
    Replaced,
    /// An unconfirmed record given up to make room for a new owner in a full table.
    Evicted,
}

/// A client record that is gone: the caller releases its opens, locks, layouts and
/// delegations, and drops its sessions if the session table has not already.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RemovedClient {
    /// The client id.
    pub clientid: Clientid4,
    /// `co_ownerid`.
    pub ownerid: Bytes,
    /// Whether the record had been confirmed (only confirmed records are in the store).
    pub was_confirmed: bool,
    /// The sessions it still had.
    pub sessions: Vec<Sessionid4>,
    /// Why it was removed.
    pub reason: RemovalReason,
    /// The confirmed record of the same owner and principal that replaced it: the same client
    /// after a restart (RFC 8881 section 18.35.5 case 5). A server that lets delegations be
    /// reclaimed across a client restart (CLAIM_DELEGATE_PREV, section 10.2.1) hands them
    /// to this client id instead of dropping them.
    pub successor: Option<Clientid4>,
}

/// A change the metadata store must apply (in the order given).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ClientEvent {
    /// Store (insert or replace, keyed by owner id) this confirmed record.
    Confirmed(PersistedClient),
    /// Delete the store's record of this owner when the client was confirmed; release the
    /// client's state.
    Removed(RemovedClient),
}

/// What a client record is: one instance of one client owner (RFC 8881 section 2.4).
#[derive(Clone, Debug)]
pub struct ClientRecord {
    clientid: Clientid4,
    ownerid: Bytes,
    verifier: Verifier4,
    principal: Principal,
    confirmed: bool,
    /// `eir_flags` granted, without `EXCHGID4_FLAG_CONFIRMED_R`.
    flags: u32,
    impl_id: Option<NfsImplId4>,
    cs_slot: CreateSessionSlot<CreateSessionResOk>,
    sessions: BTreeSet<Sessionid4>,
    next_session: u32,
}

impl ClientRecord {
    /// The client id.
    pub fn clientid(&self) -> Clientid4 {
        self.clientid
    }
    /// `co_ownerid`.
    pub fn ownerid(&self) -> &Bytes {
        &self.ownerid
    }
    /// `co_verifier`.
    pub fn verifier(&self) -> Verifier4 {
        self.verifier
    }
    /// The principal that created the record.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }
    /// Whether a CREATE_SESSION confirmed the record.
    pub fn is_confirmed(&self) -> bool {
        self.confirmed
    }
    /// The `eir_flags` granted (pNFS role bits), without `EXCHGID4_FLAG_CONFIRMED_R`.
    pub fn flags(&self) -> u32 {
        self.flags
    }
    /// The client's implementation id, if it sent one.
    pub fn impl_id(&self) -> Option<&NfsImplId4> {
        self.impl_id.as_ref()
    }
    /// The client's sessions.
    pub fn sessions(&self) -> &BTreeSet<Sessionid4> {
        &self.sessions
    }
    /// The record's CREATE_SESSION reply cache (RFC 8881 section 18.36.4).
    pub fn create_session_slot(&self) -> &CreateSessionSlot<CreateSessionResOk> {
        &self.cs_slot
    }

    fn to_persisted(&self) -> PersistedClient {
        PersistedClient {
            clientid: self.clientid,
            ownerid: self.ownerid.to_vec(),
            verifier: self.verifier,
            principal: self.principal.clone(),
        }
    }
}

/// Settings of the client table.
#[derive(Clone, Debug)]
pub struct ClientTableConfig {
    /// This boot's epoch (from the store's counter, incremented at each start).
    pub boot_epoch: u16,
    /// The lease period (`config.lease_time`).
    pub lease_time: Duration,
    /// The `EXCHGID4_FLAG_USE_*` roles this server plays: `USE_PNFS_MDS` for the MDS,
    /// `USE_PNFS_DS` for a data server.
    pub roles: u32,
    /// Most client records a new owner may find (`limits.max_clients`); see the module
    /// documentation for what is refused past it and what is not.
    pub max_clients: usize,
}

/// The default of [`ClientTableConfig::max_clients`] (and of `limits.max_clients`).
pub const DEFAULT_MAX_CLIENTS: usize = 16_384;

impl Default for ClientTableConfig {
    fn default() -> Self {
        Self {
            boot_epoch: 1,
            lease_time: Duration::from_secs(90),
            roles: EXCHGID4_FLAG_USE_PNFS_MDS,
            max_clients: DEFAULT_MAX_CLIENTS,
        }
    }
}

/// The EXCHANGE_ID flags a client may send in minor version 1 (RFC 8881 section 18.35.1).
const ARG_FLAGS_V1: u32 = EXCHGID4_FLAG_SUPP_MOVED_REFER
    | EXCHGID4_FLAG_SUPP_MOVED_MIGR
    | EXCHGID4_FLAG_BIND_PRINC_STATEID
    | EXCHGID4_FLAG_MASK_PNFS
    | EXCHGID4_FLAG_UPD_CONFIRMED_REC_A;

/// The EXCHANGE_ID flags a client may send in a minor version: minor version 2 adds
/// `EXCHGID4_FLAG_SUPP_FENCE_OPS`, which either side may set (RFC 7862 section 14.1, the 4.2
/// changes to EXCHANGE_ID). RFC 8881 does not define it, so a minor version 1 EXCHANGE_ID
/// with it set is `NFS4ERR_INVAL` (section 18.35.3: "Bits not defined above should not be
/// set in the eia_flags field. If they are, the server MUST reject the operation with
/// NFS4ERR_INVAL"). pynfs EID4 sends it and expects `NFS4ERR_INVAL` whatever the minor
/// version, and pynfs runs at minor version 2 by default; for 4.2 the RFC wins here (knfsd
/// refuses the bit in both versions).
fn arg_flags(minor: u32) -> u32 {
    if minor >= 2 {
        ARG_FLAGS_V1 | EXCHGID4_FLAG_SUPP_FENCE_OPS
    } else {
        ARG_FLAGS_V1
    }
}

/// The largest per-boot client counter (48 bits).
const COUNTER_MAX: u64 = (1 << 48) - 1;

/// All client records of this boot, indexed by client id and by owner, with their leases.
#[derive(Clone, Debug)]
pub struct ClientTable {
    epoch: u16,
    roles: u32,
    next_counter: u64,
    max_clients: usize,
    records: HashMap<Clientid4, ClientRecord>,
    confirmed: HashMap<Bytes, Clientid4>,
    unconfirmed: HashMap<Bytes, Clientid4>,
    /// The unconfirmed records by client id: oldest first, as ids grow within a boot.
    unconfirmed_order: BTreeSet<Clientid4>,
    leases: Leases,
}

impl ClientTable {
    /// An empty table for this boot.
    pub fn new(config: ClientTableConfig) -> Self {
        Self {
            epoch: config.boot_epoch,
            roles: config.roles & EXCHGID4_FLAG_MASK_PNFS,
            next_counter: 1,
            max_clients: config.max_clients,
            records: HashMap::new(),
            confirmed: HashMap::new(),
            unconfirmed: HashMap::new(),
            unconfirmed_order: BTreeSet::new(),
            leases: Leases::new(config.lease_time),
        }
    }

    /// The boot epoch in the high bits of this boot's client ids.
    pub fn epoch(&self) -> u16 {
        self.epoch
    }

    /// The leases of all records.
    pub fn leases(&self) -> &Leases {
        &self.leases
    }

    /// A record by client id, confirmed or not.
    pub fn get(&self, clientid: Clientid4) -> Option<&ClientRecord> {
        self.records.get(&clientid)
    }

    /// A confirmed record by client id; anything else is `NFS4ERR_STALE_CLIENTID`.
    pub fn confirmed(&self, clientid: Clientid4) -> Result<&ClientRecord, ClientError> {
        self.records
            .get(&clientid)
            .filter(|r| r.confirmed)
            .ok_or(ClientError::StaleClientid)
    }

    /// The confirmed record of an owner.
    pub fn confirmed_by_owner(&self, ownerid: &[u8]) -> Option<&ClientRecord> {
        self.confirmed
            .get(ownerid)
            .and_then(|id| self.records.get(id))
    }

    /// How many records (confirmed or not) exist.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no record exists.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// How many records are unconfirmed.
    pub fn unconfirmed_len(&self) -> usize {
        self.unconfirmed_order.len()
    }

    /// Whether the table holds `max_clients` records or more: a new owner's EXCHANGE_ID must
    /// find room (the caller reaps expired clients first).
    pub fn is_full(&self) -> bool {
        self.records.len() >= self.max_clients
    }

    /// Gives up the oldest unconfirmed records until the table is below its cap; `NoRoom` if
    /// it is still full. An unconfirmed record holds no session and no state, so nothing but
    /// the record goes.
    fn make_room(&mut self) -> Result<Vec<RemovedClient>, ClientError> {
        let mut evicted = Vec::new();
        while self.is_full() {
            let Some(&oldest) = self.unconfirmed_order.first() else {
                return Err(ClientError::NoRoom);
            };
            evicted.extend(self.remove(oldest, RemovalReason::Evicted));
        }
        Ok(evicted)
    }

    /// Renews the client's lease: SEQUENCE, and any operation that uses its state (RFC 8881
    /// section 8.3).
    pub fn renew(&mut self, clientid: Clientid4, now: Instant) -> Result<(), ClientError> {
        if !self.records.contains_key(&clientid) {
            return Err(ClientError::StaleClientid);
        }
        self.leases.renew(clientid, now);
        Ok(())
    }

    /// Removes every record whose lease has run out at `now` (no courtesy period). The caller
    /// releases their state, drops their sessions, and deletes the confirmed ones from the
    /// store. Call it at [`next_expiry`](Self::next_expiry).
    pub fn expire(&mut self, now: Instant) -> Vec<RemovedClient> {
        self.leases
            .expired(now)
            .into_iter()
            .filter_map(|id| self.remove(id, RemovalReason::Expired))
            .collect()
    }

    /// When the next lease runs out.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.leases.next_expiry()
    }

    /// EXCHANGE_ID (RFC 8881 section 18.35.5). `has_state` tells whether a client id still
    /// holds opens, locks, delegations or layouts (for the collision rule of case 3).
    ///
    /// | case | record found                                        | result                         |
    /// |------|-----------------------------------------------------|--------------------------------|
    /// | 1    | none                                                | new unconfirmed record         |
    /// | 2    | confirmed, same verifier and principal              | that record, `CONFIRMED_R`     |
    /// | 3    | confirmed, other principal, in use                  | `NFS4ERR_CLID_INUSE`           |
    /// | 3    | confirmed, other principal, no state or lease over  | old removed, new unconfirmed   |
    /// | 4    | unconfirmed only                                    | replaced by a new one          |
    /// | 5    | confirmed, other verifier (client reboot)           | new unconfirmed record         |
    /// | 6    | update; confirmed, same verifier and principal      | record updated, `CONFIRMED_R`  |
    /// | 7    | update; no confirmed record                         | `NFS4ERR_NOENT`                |
    /// | 8    | update; confirmed, other verifier                   | `NFS4ERR_NOT_SAME`             |
    /// | 9    | update; confirmed, other principal                  | `NFS4ERR_PERM`                 |
    ///
    /// In case 5 (the same principal rebooted) the old confirmed record, and its state, live
    /// until the new record is confirmed by CREATE_SESSION: a stray EXCHANGE_ID alone cannot
    /// destroy a client that holds state. In case 3 the old record has nothing to lose (no
    /// sessions, no state, or an expired lease), and it goes at once, as knfsd does and
    /// pynfs (EID5e) expects: its client id is stale from this reply on
    /// ([`ExchangeIdOk::removed`]). A new record replaces any unconfirmed record of the same
    /// owner.
    ///
    /// Flags: bits undefined in the request's minor version `minor` (see [`arg_flags`]) or
    /// `EXCHGID4_FLAG_CONFIRMED_R` in the arguments are `NFS4ERR_INVAL`; the pNFS role granted
    /// is the requested roles this server plays, or all its roles when the client asked for
    /// none of them (RFC 8881 section 13.1).
    /// State protection: only `SP4_NONE`; `SP4_MACH_CRED` is `NFS4ERR_INVAL` (no RPCSEC_GSS
    /// yet, and a client falls back to `SP4_NONE`), `SP4_SSV` `NFS4ERR_ENCR_ALG_UNSUPP`.
    pub fn exchange_id(
        &mut self,
        args: &ExchangeIdArgs,
        principal: &Principal,
        minor: u32,
        has_state: impl Fn(Clientid4) -> bool,
        now: Instant,
    ) -> Result<ExchangeIdOk, ClientError> {
        if args.eia_flags & !arg_flags(minor) != 0 {
            return Err(ClientError::Inval);
        }
        match args.eia_state_protect {
            StateProtect4A::None => {}
            StateProtect4A::MachCred(_) => return Err(ClientError::Inval),
            StateProtect4A::Ssv(_) => return Err(ClientError::EncrAlgUnsupp),
        }
        let update = args.eia_flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A != 0;
        let owner = &args.eia_clientowner;
        let flags = self.granted_flags(args.eia_flags);
        let impl_id = args.eia_client_impl_id.first().cloned();

        if let Some(&conf_id) = self.confirmed.get(&owner.co_ownerid) {
            let conf = &self.records[&conf_id];
            let creds_match = conf.principal == *principal;
            let verf_match = conf.verifier == owner.co_verifier;
            if update {
                if !creds_match {
                    return Err(ClientError::Perm); // case 9
                }
                if !verf_match {
                    return Err(ClientError::NotSame); // case 8
                }
                let rec = self.records.get_mut(&conf_id).expect("indexed record");
                rec.flags = flags;
                if impl_id.is_some() {
                    rec.impl_id = impl_id;
                }
                return Ok(self.reply(conf_id, ExchangeIdCase::Update, now)); // case 6
            }
            if !creds_match {
                // case 3
                let in_use = (has_state(conf_id) || !conf.sessions.is_empty())
                    && !self.leases.is_expired(conf_id, now);
                if in_use {
                    return Err(ClientError::ClidInUse);
                }
                let removed = self.remove(conf_id, RemovalReason::Replaced);
                let mut ok = self.new_unconfirmed(
                    args,
                    principal,
                    flags,
                    impl_id,
                    now,
                    ExchangeIdCase::CollisionReplaced,
                )?;
                ok.removed.extend(removed);
                return Ok(ok);
            }
            if verf_match {
                return Ok(self.reply(conf_id, ExchangeIdCase::Existing, now)); // case 2
            }
            return self.new_unconfirmed(
                args,
                principal,
                flags,
                impl_id,
                now,
                ExchangeIdCase::ClientRestart,
            );
        }
        if update {
            return Err(ClientError::NoEnt); // case 7
        }
        if self.unconfirmed.contains_key(&owner.co_ownerid) {
            // case 4: the new record takes the old one's place
            return self.new_unconfirmed(
                args,
                principal,
                flags,
                impl_id,
                now,
                ExchangeIdCase::ReplaceUnconfirmed,
            );
        }
        // case 1: the only one that grows the table for good
        let evicted = self.make_room()?;
        let mut ok = self.new_unconfirmed(
            args,
            principal,
            flags,
            impl_id,
            now,
            ExchangeIdCase::NewOwner,
        )?;
        ok.removed = evicted;
        Ok(ok)
    }

    fn granted_flags(&self, requested: u32) -> u32 {
        let asked = requested & EXCHGID4_FLAG_MASK_PNFS & self.roles;
        if asked != 0 {
            asked
        } else {
            self.roles
        }
    }

    fn reply(&mut self, clientid: Clientid4, case: ExchangeIdCase, now: Instant) -> ExchangeIdOk {
        self.leases.renew(clientid, now);
        let rec = &self.records[&clientid];
        let confirmed = if rec.confirmed {
            EXCHGID4_FLAG_CONFIRMED_R
        } else {
            0
        };
        ExchangeIdOk {
            clientid,
            sequenceid: rec.cs_slot.next_sequence(),
            flags: rec.flags | confirmed,
            state_protect: StateProtect4R::None,
            case,
            removed: Vec::new(),
        }
    }

    fn new_unconfirmed(
        &mut self,
        args: &ExchangeIdArgs,
        principal: &Principal,
        flags: u32,
        impl_id: Option<NfsImplId4>,
        now: Instant,
        case: ExchangeIdCase,
    ) -> Result<ExchangeIdOk, ClientError> {
        if self.next_counter > COUNTER_MAX {
            return Err(ClientError::Exhausted);
        }
        let owner = &args.eia_clientowner;
        if let Some(old) = self.unconfirmed.get(&owner.co_ownerid).copied() {
            self.remove(old, RemovalReason::Replaced);
        }
        let clientid = (u64::from(self.epoch) << 48) | self.next_counter;
        self.next_counter += 1;
        self.records.insert(
            clientid,
            ClientRecord {
                clientid,
                ownerid: owner.co_ownerid.clone(),
                verifier: owner.co_verifier,
                principal: principal.clone(),
                confirmed: false,
                flags,
                impl_id,
                cs_slot: CreateSessionSlot::new(),
                sessions: BTreeSet::new(),
                next_session: 0,
            },
        );
        self.unconfirmed.insert(owner.co_ownerid.clone(), clientid);
        self.unconfirmed_order.insert(clientid);
        Ok(self.reply(clientid, case, now))
    }

    /// Confirms a record (its first successful CREATE_SESSION). Any other confirmed record of
    /// the same owner is removed (RFC 8881 section 18.35.5 cases 3 and 5). Returns the store
    /// changes: the removal first, then the new record. Nothing for a record already confirmed.
    pub(crate) fn confirm(&mut self, clientid: Clientid4) -> Vec<ClientEvent> {
        let Some(rec) = self.records.get_mut(&clientid) else {
            return Vec::new();
        };
        if rec.confirmed {
            return Vec::new();
        }
        rec.confirmed = true;
        let ownerid = rec.ownerid.clone();
        let persisted = rec.to_persisted();
        self.unconfirmed.remove(&ownerid);
        self.unconfirmed_order.remove(&clientid);
        let mut events = Vec::new();
        if let Some(old) = self.confirmed.insert(ownerid, clientid) {
            let same_principal = self.records.get(&old).map(|r| &r.principal)
                == self.records.get(&clientid).map(|r| &r.principal);
            // The owner index already names the new record, so `remove` leaves it alone.
            if let Some(mut gone) = self.remove(old, RemovalReason::Replaced) {
                gone.successor = same_principal.then_some(clientid);
                events.push(ClientEvent::Removed(gone));
            }
        }
        events.push(ClientEvent::Confirmed(persisted));
        events
    }

    /// Records the reply of an executed CREATE_SESSION in the record's one-slot cache.
    pub(crate) fn record_create_session(&mut self, clientid: Clientid4, res: &CreateSessionResOk) {
        if let Some(rec) = self.records.get_mut(&clientid) {
            rec.cs_slot.record(res.csr_sequence, res.clone());
        }
    }

    /// The next per-client session number, for a new session id.
    pub(crate) fn next_session_number(&mut self, clientid: Clientid4) -> Option<u32> {
        let rec = self.records.get_mut(&clientid)?;
        let n = rec.next_session;
        rec.next_session = rec.next_session.wrapping_add(1);
        Some(n)
    }

    pub(crate) fn add_session(&mut self, clientid: Clientid4, sessionid: Sessionid4) {
        if let Some(rec) = self.records.get_mut(&clientid) {
            rec.sessions.insert(sessionid);
        }
    }

    pub(crate) fn remove_session(&mut self, clientid: Clientid4, sessionid: &Sessionid4) {
        if let Some(rec) = self.records.get_mut(&clientid) {
            rec.sessions.remove(sessionid);
        }
    }

    /// DESTROY_CLIENTID (RFC 8881 section 18.50): `NFS4ERR_CLIENTID_BUSY` while the client
    /// has sessions or state (`has_state`), `NFS4ERR_STALE_CLIENTID` when unknown. Confirmed
    /// or not, the record goes; the result says whether the store had it.
    pub fn destroy_clientid(
        &mut self,
        clientid: Clientid4,
        has_state: bool,
    ) -> Result<RemovedClient, ClientError> {
        let rec = self
            .records
            .get(&clientid)
            .ok_or(ClientError::StaleClientid)?;
        if has_state || !rec.sessions.is_empty() {
            return Err(ClientError::ClientidBusy);
        }
        self.remove(clientid, RemovalReason::Destroyed)
            .ok_or(ClientError::StaleClientid)
    }

    /// Removes a record and its lease; `None` if unknown.
    fn remove(&mut self, clientid: Clientid4, reason: RemovalReason) -> Option<RemovedClient> {
        let rec = self.records.remove(&clientid)?;
        self.leases.remove(clientid);
        self.unconfirmed_order.remove(&clientid);
        let index = if rec.confirmed {
            &mut self.confirmed
        } else {
            &mut self.unconfirmed
        };
        if index.get(&rec.ownerid) == Some(&clientid) {
            index.remove(&rec.ownerid);
        }
        Some(RemovedClient {
            clientid,
            ownerid: rec.ownerid,
            was_confirmed: rec.confirmed,
            sessions: rec.sessions.into_iter().collect(),
            reason,
            successor: None,
        })
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
