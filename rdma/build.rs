//! Builds the C shim over rdma-core (src/shim.c) when rdma-core's headers are there, and says
//! so with `--cfg rdma_core`; without them the crate builds with stand-ins that fail (RDMA is
//! then off, and the servers say why).
//!
//! `PNFS_RDMA=off` builds without the shim even where the headers are (to test that path);
//! `PNFS_RDMA=on` makes missing headers a build error instead of a warning (CI, to be sure the
//! binary it tests has RDMA).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGES: &str = "libibverbs-dev librdmacm-dev";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rdma_core)");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/shim.c");
    println!("cargo:rerun-if-env-changed=PNFS_RDMA");
    // Installing librdmacm-dev adds rdma_cma.h here (the folder itself comes with the kernel
    // headers): the probe then runs again. A path that does not exist would rerun it on every
    // build.
    if Path::new("/usr/include/rdma").is_dir() {
        println!("cargo:rerun-if-changed=/usr/include/rdma");
    }

    let mode = env::var("PNFS_RDMA").unwrap_or_default();
    let found = match mode.as_str() {
        "off" => {
            println!(
                "cargo:warning=RDMA is built out (PNFS_RDMA=off): `pnfs server` will serve TCP only"
            );
            return;
        }
        "" | "auto" | "on" => probe(),
        other => panic!("PNFS_RDMA={other}: expected off, on or auto"),
    };
    if let Err(why) = found {
        if mode == "on" {
            panic!(
                "PNFS_RDMA=on but rdma-core's headers do not build ({why}): apt-get install {PACKAGES}"
            );
        }
        println!(
            "cargo:warning=RDMA is built out: rdma-core's headers are missing ({why}); \
             `apt-get install {PACKAGES}` (Debian's rdma-core) and rebuild to serve NFS over RDMA"
        );
        return;
    }

    cc::Build::new()
        .file("src/shim.c")
        .std("c11")
        .warnings(true)
        .extra_warnings(true)
        .compile("pnfs_rdma_shim");
    println!("cargo:rustc-link-lib=dylib=rdmacm");
    println!("cargo:rustc-link-lib=dylib=ibverbs");
    println!("cargo:rustc-cfg=rdma_core");
}

/// Whether a program including both headers compiles and links against libibverbs and
/// librdmacm, with the compiler the shim would be built with.
fn probe() -> Result<(), String> {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let src = out.join("probe.c");
    std::fs::write(
        &src,
        "#include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>\n\
         int main(void) {\n\
         struct rdma_event_channel *ch = rdma_create_event_channel();\n\
         if (ch) rdma_destroy_event_channel(ch);\n\
         return ibv_get_device_list(0) != 0;\n}\n",
    )
    .map_err(|e| format!("writing {}: {e}", src.display()))?;
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .warnings(false)
        .get_compiler();
    let mut cmd: Command = compiler.to_command();
    cmd.arg(&src)
        .arg("-o")
        .arg(out.join("probe"))
        .arg("-lrdmacm")
        .arg("-libverbs");
    let output = cmd
        .output()
        .map_err(|e| format!("running {}: {e}", compiler.path().display()))?;
    if output.status.success() {
        return Ok(());
    }
    // The first error, without the probe's path: "fatal error: infiniband/verbs.h: No such file
    // or directory", "cannot find -lrdmacm: ...".
    let stderr = String::from_utf8_lossy(&output.stderr);
    let why = stderr
        .lines()
        .find_map(|l| {
            ["fatal error:", "error:", "cannot find"]
                .iter()
                .find_map(|k| l.find(k).map(|i| l[i..].trim().to_string()))
        })
        .unwrap_or_else(|| "the probe did not build".into());
    Err(why)
}
