//! The MDS's reading of the configuration file. The file's format, shared with the data
//! servers, is `cluster::config` (re-exported here); what only the MDS can check is how the
//! exports nest into its namespace, which it builds ([`crate::compound::exports::Exports`]): an export
//! inside another's pseudo path, and a configured layout directory behind a junction to
//! another export. [`parse`] and [`load`] check both.

use std::path::Path;

pub use cluster::config::*;

use crate::compound::exports::Exports;

/// A [`ConfigError`] for `field`.
pub(crate) fn err(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::new(field, message)
}

/// Reads and validates a YAML file for the MDS: [`Config::load`] and [`check_namespace`].
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let cfg = Config::load(path)?;
    check_namespace(&cfg)?;
    Ok(cfg)
}

/// Parses and validates YAML text for the MDS: [`Config::parse`] and [`check_namespace`].
pub fn parse(text: &str) -> Result<Config, ConfigError> {
    let cfg = Config::parse(text)?;
    check_namespace(&cfg)?;
    Ok(cfg)
}

/// Checks what needs the MDS's export tree: how the exports join (nesting rules), and that no
/// configured layout directory is behind a junction to another export (whose files are that
/// export's: configure it under that export).
pub fn check_namespace(cfg: &Config) -> Result<(), ConfigError> {
    let exports = Exports::new(&cfg.exports)?;
    for (i, d) in cfg.cluster.layout.directories.iter().enumerate() {
        let field = |name: &str| format!("cluster.layout.directories[{i}].{name}");
        let Some(export) = d
            .export_in(&cfg.exports)
            .filter(|&x| exports.get(x).is_some())
        else {
            let id = d.export.map_or_else(|| "none".into(), |x| x.to_string());
            return Err(err(field("export"), format!("{id} is not an export id")));
        };
        let parts = d.components().map_err(|m| err(field("path"), m))?;
        if let Some((first, _)) = exports
            .junctions(export)
            .find(|(name, _)| parts.first() == Some(name))
        {
            return Err(err(
                field("path"),
                format!(
                    "{:?} is behind the junction {first:?} of export {export} to another \
                     export; configure it under that export",
                    d.path
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_exports_are_refused_by_the_mds_not_by_the_shared_format() {
        let yaml = "exports:\n  - id: 1\n  - id: 2\n    pseudo: /a/b\n";
        Config::parse(yaml).unwrap();
        let e = parse(yaml).unwrap_err();
        assert_eq!(e.field, "exports[1].pseudo");
        assert!(e.message.contains("inside export 1"), "{e}");
    }

    #[test]
    fn a_layout_directory_behind_a_junction_is_refused() {
        // Export 1 at / carries export 2 as the junction "s" in its root: a directory there
        // is export 2's.
        let yaml = "exports:\n  - id: 1\n  - id: 2\n    path: /s\n    pseudo: /s\n\
                    cluster:\n  layout:\n    directories:\n      - { path: /s/x }\n";
        let e = parse(yaml).unwrap_err().to_string();
        assert!(
            e.starts_with("cluster.layout.directories[0].path: \"/s/x\" is behind the junction"),
            "{e}"
        );
        // The same path in the other export is fine.
        parse(
            "exports:\n  - id: 1\n  - id: 2\n    path: /s\n    pseudo: /s\n\
             cluster:\n  layout:\n    directories:\n      - { export: 2, path: /x }\n",
        )
        .unwrap();
    }

    #[test]
    fn the_shared_checks_run_too() {
        let e = parse("lease_time: 5\n").unwrap_err();
        assert_eq!(e.to_string(), "lease_time: 5 is outside 10..=3600 seconds");
    }
}
