//! Data servers that come back with another object store: a replaced disk, an emptied data
//! directory, a new node configured under the old id. The data server tells its store's
//! identity when it registers (`RegisterOk::store_id`, `pfs_core::ObjectStore::identity`);
//! the registry asks this check before it counts the data server up
//! ([`super::devices::Devices::on_store`]). Another identity than the one on record
//! (`crate::store::Store::ds_registered`, table `ds_stores`) marks every copy of a mirrored
//! file on that data server stale, durably and in the same transaction, so no layout names
//! those copies and no read trusts them; the re-silver task ([`super::mirrors`]) then
//! rebuilds them from the good copies, as for a data server that missed writes while down.
//! Files without mirrors that had a stripe there lost it: they are counted and logged.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use tracing::{error, info, warn};

use super::devices::{hex, StoreCheck};
use crate::server::Pnfs;
use crate::store::Store;

/// The check for [`super::devices::Devices::on_store`]: `rings` are every recorded ring
/// generation's ids; `export` names the handle a layout recall of a file without a stale
/// mark uses (the first configured export).
pub fn store_check(
    store: Store,
    rings: Arc<BTreeMap<u32, Vec<u16>>>,
    pnfs: Weak<Pnfs>,
    export: u16,
) -> StoreCheck {
    Arc::new(move |ds, id| {
        let (store, rings, pnfs) = (store.clone(), rings.clone(), pnfs.clone());
        Box::pin(async move {
            let replaced = store
                .ds_registered(ds, id, rings, export)
                .await
                .map_err(|e| format!("recording its object store's identity: {e}"))?;
            let Some(r) = replaced else {
                return Ok(());
            };
            warn!(
                ds,
                was = %hex(&r.was),
                now = %hex(&id),
                copies = r.stale.len(),
                "data server registered with another object store (replaced or emptied): \
                 its copies of mirrored files are marked stale and will be re-silvered"
            );
            if r.lost_files > 0 {
                error!(
                    ds,
                    files = r.lost_files,
                    "files without mirrors had a stripe on the replaced data server: that \
                     data is lost"
                );
            }
            if let Some(pnfs) = pnfs.upgrade() {
                pnfs.mirrors().marked_elsewhere(&r.stale);
                pnfs.mirrors()
                    .replaced_stores
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            info!(ds, "replaced data server's store recorded");
            Ok(())
        })
    })
}
