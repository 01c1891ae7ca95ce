//! Validation of the `cluster` section: what serde cannot check (ids, addresses, ports, the
//! secret's form, stripe units and counts, per-export and per-directory overrides).

use std::collections::{HashMap, HashSet};

use super::secret::hex_secret;
use super::*;

impl ClusterConfig {
    /// Checks what serde cannot; `cfg` is the whole configuration (exports, MDS ports).
    pub fn validate(&self, cfg: &Config) -> Result<(), ConfigError> {
        if let Some(s) = &self.secret {
            hex_secret(s).map_err(|m| err("cluster.secret", m))?;
            if self.secret_file.is_some() {
                return Err(err(
                    "cluster.secret_file",
                    "set either secret or secret_file, not both",
                ));
            }
        }
        let n = self.data_servers.len();
        let mut ids = HashSet::new();
        let mut advertised: HashMap<SocketAddr, String> = HashMap::new();
        for (i, d) in self.data_servers.iter().enumerate() {
            let f = |name: &str| format!("cluster.data_servers[{i}].{name}");
            if d.id == 0 {
                return Err(err(
                    f("id"),
                    "0 is the MDS's node id; data servers start at 1",
                ));
            }
            if !ids.insert(d.id) {
                return Err(err(
                    f("id"),
                    format!("{} is used by another data server", d.id),
                ));
            }
            if d.addresses.is_empty() || d.addresses.len() > MAX_DS_ADDRESSES {
                return Err(err(
                    f("addresses"),
                    format!(
                        "{} addresses: give 1 to {MAX_DS_ADDRESSES}",
                        d.addresses.len()
                    ),
                ));
            }
            for (j, a) in d.addresses.iter().enumerate() {
                if a.port() == 0 {
                    return Err(err(
                        format!("{}[{j}]", f("addresses")),
                        format!("{a} has port 0"),
                    ));
                }
                if let Some(other) = advertised.insert(*a, f(&format!("addresses[{j}]"))) {
                    return Err(err(
                        f(&format!("addresses[{j}]")),
                        format!("{a} is also {other}"),
                    ));
                }
            }
            if d.listen_addr().port() == 0 {
                return Err(err(f("listen"), format!("{} has port 0", d.listen_addr())));
            }
            let Some(control) = d.control_addr() else {
                return Err(err(
                    f("control"),
                    format!(
                        "no default: port {} + {CONTROL_PORT_OFFSET} is over 65535; set it",
                        d.first().port()
                    ),
                ));
            };
            if control.port() == 0 {
                return Err(err(f("control"), format!("{control} has port 0")));
            }
            if let Some(other) = advertised.insert(control, f("control")) {
                return Err(err(f("control"), format!("{control} is also {other}")));
            }
            if let Some(c) = d.control_listen {
                if c.port() == 0 {
                    return Err(err(f("control_listen"), format!("{c} has port 0")));
                }
            }
            match (d.backend, &d.shared_dir) {
                (Backend::Shared, None) => {
                    return Err(err(f("shared_dir"), "backend shared needs a shared_dir"))
                }
                (Backend::Local | Backend::Null, Some(p)) => {
                    return Err(err(
                        f("shared_dir"),
                        format!("{} is only for backend shared", p.display()),
                    ))
                }
                _ => {}
            }
            if d.failure_domain
                .as_deref()
                .is_some_and(|n| n.trim().is_empty())
            {
                return Err(err(
                    f("failure_domain"),
                    "an empty name; leave it out for a domain of its own",
                ));
            }
        }
        let shared = self
            .data_servers
            .iter()
            .filter(|d| d.backend == Backend::Shared)
            .count();
        if shared != 0 && shared != n {
            return Err(err(
                "cluster.data_servers",
                format!(
                    "{shared} of {n} data servers use backend shared: all or none (sparse and \
                     dense packing cannot mix in one layout)"
                ),
            ));
        }
        self.check_bound_ports(cfg)?;
        check_unit("cluster.layout.stripe_unit", self.layout.stripe_unit)?;
        if let Some(c) = self.layout.stripe_count {
            check_count("cluster.layout.stripe_count", c, n)?;
        }
        let flex_count = |field: String, count: Option<u32>, flex: bool| match count {
            Some(c) if flex && c != 1 => Err(err(
                field,
                format!(
                    "{c}: a flex files layout keeps a file whole on one data server (stripe \
                     count 1; RFC 8435 maps offsets sparsely only)"
                ),
            )),
            _ => Ok(()),
        };
        // Mirrors are copies of a flex files layout (RFC 8435 section 5.1); a file layout
        // has no way to name them.
        let flex_mirrors = |field: String, mirrors: Option<u32>, flex: bool| match mirrors {
            Some(m) => {
                check_count(&field, m, n)?;
                if shared != 0 && m != 1 {
                    return Err(err(
                        field,
                        format!(
                            "{m}: the shared backend keeps one file per file id, which every \
                             data server sees: mirrors would be that one file"
                        ),
                    ));
                }
                if !flex && m != 1 {
                    return Err(err(
                        field,
                        format!(
                            "{m}: mirrors need layout_type flex_files (a file layout cannot \
                             name copies)"
                        ),
                    ));
                }
                Ok(())
            }
            None => Ok(()),
        };
        let default_flex = self.layout.layout_type == super::LayoutType::FlexFiles;
        flex_count(
            "cluster.layout.stripe_count".into(),
            self.layout.stripe_count,
            default_flex,
        )?;
        flex_mirrors(
            "cluster.layout.mirrors".into(),
            self.layout.mirrors,
            default_flex,
        )?;
        let mut seen = HashSet::new();
        for (i, e) in self.layout.exports.iter().enumerate() {
            let f = |name: &str| format!("cluster.layout.exports[{i}].{name}");
            if !cfg.exports.iter().any(|x| x.id == e.export) {
                return Err(err(
                    f("export"),
                    format!("{} is not an export id", e.export),
                ));
            }
            if !seen.insert(e.export) {
                return Err(err(
                    f("export"),
                    format!("export {} has another layout entry", e.export),
                ));
            }
            if let Some(u) = e.stripe_unit {
                check_unit(&f("stripe_unit"), u)?;
            }
            if let Some(c) = e.stripe_count {
                check_count(&f("stripe_count"), c, n)?;
            }
            let flex = e
                .layout_type
                .map_or(default_flex, |t| t == super::LayoutType::FlexFiles);
            // An export that turns flex files on inherits no stripe count from the default.
            flex_count(f("stripe_count"), e.stripe_count, flex)?;
            // An export that turns flex files off inherits the default's mirrors as 1.
            flex_mirrors(f("mirrors"), e.mirrors, flex)?;
        }
        self.check_directories(cfg)
    }

    /// The per-directory overrides: a known export, a path inside it, one entry per
    /// directory, and valid values. Whether the export itself serves the path (not through a
    /// junction to another export, whose files are that export's) is the MDS's to check, on
    /// its export tree (`mds::config::check_namespace`).
    fn check_directories(&self, cfg: &Config) -> Result<(), ConfigError> {
        let mut seen = HashSet::new();
        for (i, d) in self.layout.directories.iter().enumerate() {
            let f = |name: &str| format!("cluster.layout.directories[{i}].{name}");
            let Some(export) = d
                .export_in(&cfg.exports)
                .filter(|&x| cfg.exports.iter().any(|e| e.id == x))
            else {
                let id = d.export.map_or_else(|| "none".into(), |x| x.to_string());
                return Err(err(f("export"), format!("{id} is not an export id")));
            };
            let parts = d.components().map_err(|m| err(f("path"), m))?;
            if !seen.insert((export, parts.join("/"))) {
                return Err(err(
                    f("path"),
                    format!("{:?} of export {export} has another layout entry", d.path),
                ));
            }
            if let Some(u) = d.stripe_unit {
                check_unit(&f("stripe_unit"), u)?;
            }
            if let Some(c) = d.stripe_count {
                check_count(&f("stripe_count"), c, self.data_servers.len())?;
            }
            let flex = self.layout_for(export).is_some_and(|p| p.flex_files);
            if let Some(m) = d.mirrors {
                check_count(&f("mirrors"), m, self.data_servers.len())?;
                if !flex && m != 1 {
                    return Err(err(
                        f("mirrors"),
                        format!("{m}: export {export} serves file layouts, which have no mirrors"),
                    ));
                }
            }
            if flex {
                if let Some(c) = d.stripe_count.filter(|&c| c != 1) {
                    return Err(err(
                        f("stripe_count"),
                        format!(
                            "{c}: export {export} serves flex files layouts, whose files live \
                             whole on one data server (stripe count 1)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Refuses two services of one host bound to one port. A data server whose first address
    /// is loopback or unspecified runs on the MDS's host; others are grouped by that IP.
    /// Different hosts may reuse ports, and one host may reuse a port on different specific
    /// IPs (127.0.0.1:2049 and 127.0.0.2:2049).
    fn check_bound_ports(&self, cfg: &Config) -> Result<(), ConfigError> {
        let host_of = |ip: IpAddr| -> Option<IpAddr> {
            (!(ip.is_loopback() || ip.is_unspecified())).then_some(ip)
        };
        // (host, bound address, field); host None is the MDS's host.
        let mut bound: Vec<(Option<IpAddr>, SocketAddr, String)> =
            vec![(None, cfg.listen, "listen".into())];
        if let Some(m) = cfg.metrics_listen {
            bound.push((None, m, "metrics_listen".into()));
        }
        for (i, d) in self.data_servers.iter().enumerate() {
            let host = host_of(d.first().ip());
            bound.push((
                host,
                d.listen_addr(),
                format!("cluster.data_servers[{i}].listen"),
            ));
            if let Some(c) = d.control_listen_addr() {
                bound.push((host, c, format!("cluster.data_servers[{i}].control_listen")));
            }
        }
        for (k, (host, a, field)) in bound.iter().enumerate() {
            for (h2, b, other) in &bound[..k] {
                let overlap =
                    a.ip() == b.ip() || a.ip().is_unspecified() || b.ip().is_unspecified();
                if host == h2 && a.port() == b.port() && overlap {
                    return Err(err(
                        field.clone(),
                        format!("{a} is bound on the same host by {other} ({b})"),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn check_unit(field: &str, unit: u32) -> Result<(), ConfigError> {
    if unit == 0 || !unit.is_multiple_of(64) {
        return Err(err(
            field,
            format!("{unit} is not a non-zero multiple of 64 (RFC 8881 section 13.3, nfl_util)"),
        ));
    }
    Ok(())
}

fn check_count(field: &str, count: u32, data_servers: usize) -> Result<(), ConfigError> {
    if count == 0 || count as usize > data_servers {
        return Err(err(
            field,
            format!("{count} is outside 1..={data_servers} (the number of data servers)"),
        ));
    }
    Ok(())
}
