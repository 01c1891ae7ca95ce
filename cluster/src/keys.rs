//! The secrets an MDS shares with its data servers, so that a DS checks stateids and DS
//! filehandles alone, without a round trip (ARCHITECTURE.md: "stateids a DS can check alone").
//!
//! Both keys are derived from the MDS's server key (kept in its metadata store), each for one
//! purpose, so a DS never holds the key that authenticates MDS filehandles and session ids:
//!
//! ```text
//!  server key (32 B, metadata store) ──derive_key("pnfs-rs 2026 stateid MAC")──────> stateid key
//!                                    └─derive_key("pnfs-rs 2026 DS filehandle MAC")─> DS fh key
//! ```
//!
//! The MDS's boot epoch travels with them: a stateid of another epoch is
//! `NFS4ERR_STALE_STATEID` on the DS as on the MDS.

/// What a data server is given by its MDS (over the control protocol, authenticated with
/// the cluster secret) to check I/O alone. Replaced as a whole when the MDS restarts.
#[derive(Clone, PartialEq, Eq)]
pub struct DsKeys {
    /// Key of the stateid MAC ([`crate::stateid::StateidMinter`]).
    pub stateid_key: [u8; 32],
    /// Key of the DS filehandle MAC ([`crate::ds_fh::DsFhCodec`]).
    pub fh_key: [u8; 32],
    /// The MDS's boot epoch (bytes 2..4 of every stateid it mints in this boot).
    pub mds_epoch: u16,
}

/// Context string of the stateid key derivation (BLAKE3 `derive_key`): fixed forever.
const STATEID_CONTEXT: &str = "pnfs-rs 2026 stateid MAC";
/// Context string of the DS filehandle key derivation: fixed forever (DS filehandles are
/// kept by clients across restarts of the MDS and the DSs).
const DS_FH_CONTEXT: &str = "pnfs-rs 2026 DS filehandle MAC";

impl DsKeys {
    /// The keys an MDS with `server_key` hands to its data servers in boot `mds_epoch`.
    pub fn derive(server_key: &[u8; 32], mds_epoch: u16) -> Self {
        Self {
            stateid_key: blake3::derive_key(STATEID_CONTEXT, server_key),
            fh_key: blake3::derive_key(DS_FH_CONTEXT, server_key),
            mds_epoch,
        }
    }
}

impl std::fmt::Debug for DsKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a key.
        f.debug_struct("DsKeys")
            .field("mds_epoch", &self.mds_epoch)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_keys_differ_from_each_other_and_from_the_server_key() {
        let server = [9u8; 32];
        let k = DsKeys::derive(&server, 3);
        assert_ne!(k.stateid_key, k.fh_key);
        assert_ne!(k.stateid_key, server);
        assert_ne!(k.fh_key, server);
        assert_eq!(
            k,
            DsKeys::derive(&server, 3),
            "deterministic: survives restarts"
        );
        assert_ne!(DsKeys::derive(&[8u8; 32], 3).fh_key, k.fh_key);
    }

    #[test]
    fn debug_prints_the_epoch_and_no_key() {
        let k = DsKeys::derive(&[0xab; 32], 7);
        let s = format!("{k:?}");
        assert!(s.contains("mds_epoch: 7"), "{s}");
        assert!(!s.contains('['), "{s}");
    }
}
