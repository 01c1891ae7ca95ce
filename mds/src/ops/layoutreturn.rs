//! LAYOUTRETURN (RFC 8881 section 18.44): of a file, of a file system, or of everything.

use crate::compound::Ctx;
use crate::state::layout::LayoutError;
use crate::state::stateid::resolve_current;
use nfs_proto::nfs4::*;

/// LAYOUTRETURN (RFC 8881 section 18.44).
///
/// `LAYOUTRETURN4_FILE` drops the iomode (ANY: both) of the current file's layout, whatever
/// range it names: this server grants whole-file layouts only, and the Linux client returns
/// whole files. `LAYOUTRETURN4_ALL` drops every layout of the client. `LAYOUTRETURN4_FSID`
/// drops those of the current filehandle's file system; the layout table does not record a
/// layout's export, so it is served only when there is one export (then it is ALL) and is
/// NFS4ERR_NOTSUPP otherwise.
pub fn layoutreturn(ctx: &mut Ctx, a: &LayoutReturnArgs) -> LayoutReturnRes {
    match layoutreturn_inner(ctx, a) {
        Ok(r) => {
            if let LayoutreturnStateid::Present(s) = r {
                ctx.cstateid = Some(s);
            }
            LayoutReturnRes::Ok(r)
        }
        Err(s) => LayoutReturnRes::Err(s),
    }
}

fn layoutreturn_inner(
    ctx: &mut Ctx,
    a: &LayoutReturnArgs,
) -> Result<LayoutreturnStateid, NfsStat4> {
    let clientid = ctx.client()?;
    if !matches!(
        a.lora_layout_type,
        Layouttype4::LAYOUT4_NFSV4_1_FILES | Layouttype4::LAYOUT4_FLEX_FILES
    ) {
        return Err(NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE);
    }
    match &a.lora_layoutreturn {
        Layoutreturn4::File(f) => {
            let fileid = ctx.fh()?.fileid;
            if a.lora_layout_type == Layouttype4::LAYOUT4_FLEX_FILES {
                report(ctx, clientid, fileid, &f.lrf_body);
            }
            let stateid = resolve_current(&f.lrf_stateid, ctx.cstateid.as_ref())?;
            let left =
                ctx.mds
                    .tables()
                    .layouts()
                    .return_file(clientid, fileid, &stateid, a.lora_iomode);
            ctx.mds.pnfs().settler().layouts_gone(fileid);
            match left {
                Ok(Some(s)) => Ok(LayoutreturnStateid::Present(s)),
                // A layout of an earlier boot is gone already: returning it is done (the
                // Linux client's return-on-close in a CLOSE compound must not fail the CLOSE).
                Ok(None) | Err(LayoutError::Stale) => Ok(LayoutreturnStateid::Absent),
                Err(e) => Err(e.into()),
            }
        }
        Layoutreturn4::Fsid => {
            // The pseudo file system holds no regular files, so no layouts.
            if ctx.fh()?.export == crate::compound::exports::PSEUDO_EXPORT {
                return Ok(LayoutreturnStateid::Absent);
            }
            if ctx.mds.cfg().exports.len() != 1 {
                return Err(NfsStat4::NFS4ERR_NOTSUPP);
            }
            ctx.mds.tables().layouts().return_all(clientid, |_| true);
            Ok(LayoutreturnStateid::Absent)
        }
        Layoutreturn4::All => {
            ctx.mds.tables().layouts().return_all(clientid, |_| true);
            Ok(LayoutreturnStateid::Absent)
        }
        Layoutreturn4::Other(_) => Err(NfsStat4::NFS4ERR_INVAL),
    }
}

/// The report a flex files LAYOUTRETURN carries (RFC 8435 section 9.3): each data server
/// error is counted (`pnfs_layout_io_errors_total`) and logged with the data server it names;
/// a report that does not decode is logged and the return goes on (the layout is the
/// client's to give back either way). Statistics are not kept yet.
fn report(ctx: &Ctx, clientid: u64, fileid: u64, body: &bytes::Bytes) {
    use nfs_proto::nfs4::layout_flex::FfLayoutreturn4;
    let r = match FfLayoutreturn4::from_body(Layouttype4::LAYOUT4_FLEX_FILES, body) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(clientid, fileid, "flex files LAYOUTRETURN report: {e}");
            return;
        }
    };
    for ioerr in &r.fflr_ioerr_report {
        errors(
            ctx,
            clientid,
            fileid,
            &ioerr.ffie_errors,
            ioerr.ffie_offset,
            ioerr.ffie_length,
        );
    }
}

/// Data server errors a client reports (a flex files LAYOUTRETURN's `ff_ioerr4`, LAYOUTERROR):
/// each counted for the data server its device names (`crate::pnfs::reports`) and logged.
/// For a mirrored file, every layout of it is recalled, the reporter's too (a LAYOUTERROR
/// keeps its layout): they name the failing data server, and new ones leave it out
/// (`layoutget::layout_copies`), so a client stops reading from a dead copy.
pub(crate) fn errors(
    ctx: &Ctx,
    clientid: u64,
    fileid: u64,
    errors: &[DeviceError4],
    offset: u64,
    length: u64,
) {
    for e in errors {
        let server = crate::pnfs::reports::device_server(&ctx.mds, &e.de_deviceid);
        // The first report of a data server in a minute is a warning, the rest debug: a
        // client writing 1 MiB pieces reports every piece in flight when one dies.
        macro_rules! report {
            ($level:ident, $msg:literal) => {
                tracing::$level!(
                    clientid,
                    fileid,
                    data_server = ?server,
                    status = ?e.de_status,
                    op = ?e.de_opnum,
                    offset,
                    length,
                    $msg
                )
            };
        }
        if ctx.mds.pnfs().reports().error(server) {
            report!(
                warn,
                "a client reports a data server error (more in the next minute: debug level)"
            );
        } else {
            report!(debug, "a client reports a data server error");
        }
    }
    if !errors.is_empty()
        && ctx
            .mds
            .store()
            .stripes(fileid)
            .ok()
            .flatten()
            .is_some_and(|s| s.is_mirrored())
    {
        super::dir::recall_layouts_but(ctx, fileid, None);
    }
}
