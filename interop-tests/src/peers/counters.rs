//! The counters page of `pnfs server`, parsed: which data server served how many of what.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::PeerError;

/// One sample of the counters page: `name{label="value",...} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The metric's name, e.g. `pnfs_ds_ops_total`.
    pub name: String,
    /// Its labels in the order of the page.
    pub labels: Vec<(String, String)>,
    /// Its value.
    pub value: f64,
}

impl Sample {
    /// The value of label `key`, if the sample has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the sample has every one of these labels with these values.
    pub fn matches(&self, labels: &[(&str, &str)]) -> bool {
        labels.iter().all(|(k, v)| self.label(k) == Some(*v))
    }
}

/// The samples of a counters page (Prometheus text exposition format, as `mds::net::metrics`
/// renders it), for tests that show where I/O went.
///
/// Operation labels carry the RFC's names: `op="OP_WRITE"`, and `status="ok"` or the
/// `NFS4ERR_` name. I/O through layouts counts in `pnfs_ds_ops_total{ds,op,status}` (from the
/// data servers' last HEALTH replies to the MDS, so it lags by up to one HEALTH round), I/O
/// through the MDS in `pnfs_ops_total{op,status}`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    samples: Vec<Sample>,
}

impl Counters {
    /// Parses the page's body: `#` lines and blank lines are skipped; any other line must be
    /// `name value` or `name{labels} value` (an optional timestamp after the value is
    /// ignored).
    pub fn parse(text: &str) -> Result<Counters, String> {
        let samples = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|(i, l)| {
                parse_sample(l.trim()).map_err(|why| format!("line {}: {why}: {l:?}", i + 1))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Counters { samples })
    }

    /// Every sample, in page order.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    /// The value of the sample named `name` with exactly these labels (in any order).
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| s.name == name && s.labels.len() == labels.len() && s.matches(labels))
            .map(|s| s.value)
    }

    /// The sum of the samples named `name` that carry these labels (and any others):
    /// `sum("pnfs_ds_ops_total", &[("op", "OP_WRITE"), ("status", "ok")])` adds up every data
    /// server's successful WRITEs. 0 when none matches (a counter not yet incremented is
    /// absent from the page).
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name && s.matches(labels))
            .map(|s| s.value)
            .sum()
    }

    /// The samples as `name{labels}` (as on the page) to value: for printing, or for a lookup
    /// by the full series name.
    pub fn to_map(&self) -> BTreeMap<String, f64> {
        self.samples
            .iter()
            .map(|s| {
                let key = if s.labels.is_empty() {
                    s.name.clone()
                } else {
                    let l: Vec<String> =
                        s.labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
                    format!("{}{{{}}}", s.name, l.join(","))
                };
                (key, s.value)
            })
            .collect()
    }
}

/// One sample line.
fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .ok_or("no value")?;
    let name = &line[..name_end];
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    {
        return Err(format!("bad metric name {name:?}"));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        let mut chars = after.char_indices().peekable();
        let end = loop {
            // Skip separators; `}` ends the set.
            while let Some(&(_, c)) = chars.peek() {
                if c == ',' || c == ' ' {
                    chars.next();
                } else {
                    break;
                }
            }
            match chars.peek() {
                Some(&(i, '}')) => break i,
                None => return Err("unterminated labels".into()),
                _ => {}
            }
            let mut key = String::new();
            for (_, c) in chars.by_ref() {
                if c == '=' {
                    break;
                }
                key.push(c);
            }
            if key.is_empty() || key.contains(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                return Err(format!("bad label name {key:?}"));
            }
            if !matches!(chars.next(), Some((_, '"'))) {
                return Err(format!("label {key}: value not quoted"));
            }
            let mut value = String::new();
            loop {
                match chars.next() {
                    None => return Err(format!("label {key}: unterminated value")),
                    Some((_, '"')) => break,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, c @ ('\\' | '"'))) => value.push(c),
                        other => return Err(format!("label {key}: bad escape {other:?}")),
                    },
                    Some((_, c)) => value.push(c),
                }
            }
            labels.push((key, value));
        };
        rest = &after[end + 1..];
    }
    let value = rest.split_whitespace().next().ok_or("no value")?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse::<f64>().map_err(|_| format!("bad value {v:?}"))?,
    };
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// `GET /metrics HTTP/1.0` on `addr` (as `pnfs stats` does), parsed.
pub fn fetch_counters(addr: SocketAddr) -> Result<Counters, PeerError> {
    let fail = |why: String| PeerError::Metrics { addr, why };
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| fail(format!("connect: {e}")))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .and_then(|()| s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n"))
        .map_err(|e| fail(format!("request: {e}")))?;
    let mut page = Vec::new();
    s.read_to_end(&mut page)
        .map_err(|e| fail(format!("reading: {e}")))?;
    let page = String::from_utf8(page).map_err(|_| fail("not UTF-8".into()))?;
    let (head, body) = page
        .split_once("\r\n\r\n")
        .ok_or_else(|| fail("no HTTP header".into()))?;
    let status = head.lines().next().unwrap_or("");
    if !status.starts_with("HTTP/1.0 200") && !status.starts_with("HTTP/1.1 200") {
        return Err(fail(format!("answered {status:?}")));
    }
    Counters::parse(body).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_parse_labels_escapes_and_bare_samples() {
        let page = "# HELP pnfs_ops_total Operations.\n# TYPE pnfs_ops_total counter\n\
                    pnfs_ops_total{op=\"OP_WRITE\",status=\"ok\"} 7\n\
                    pnfs_ops_total{op=\"OP_WRITE\",status=\"NFS4ERR_GRACE\"} 2\n\
                    pnfs_ds_ops_total{ds=\"1\",op=\"OP_WRITE\",status=\"ok\"} 3\n\
                    pnfs_ds_ops_total{ds=\"2\",op=\"OP_WRITE\",status=\"ok\"} 4.5\n\
                    pnfs_ds_ops_total{ds=\"2\",op=\"OP_READ\",status=\"ok\"} 100\n\
                    odd{path=\"a\\\"b\\\\c\\nd\"} 1e3 1700000000\n\
                    pnfs_grace 0\n\n";
        let c = Counters::parse(page).unwrap();
        assert_eq!(c.samples().len(), 7);
        assert_eq!(
            c.sum("pnfs_ds_ops_total", &[("op", "OP_WRITE"), ("status", "ok")]),
            7.5
        );
        assert_eq!(c.sum("pnfs_ds_ops_total", &[("ds", "2")]), 104.5);
        assert_eq!(c.sum("pnfs_ops_total", &[("op", "OP_WRITE")]), 9.0);
        assert_eq!(c.sum("pnfs_ops_total", &[("op", "OP_READ")]), 0.0);
        assert_eq!(
            c.get("pnfs_ops_total", &[("status", "ok"), ("op", "OP_WRITE")]),
            Some(7.0)
        );
        // `get` wants the exact label set; `sum` any superset.
        assert_eq!(c.get("pnfs_ds_ops_total", &[("ds", "1")]), None);
        assert_eq!(c.get("pnfs_grace", &[]), Some(0.0));
        assert_eq!(c.samples()[5].label("path"), Some("a\"b\\c\nd"));
        assert_eq!(c.get("odd", &[("path", "a\"b\\c\nd")]), Some(1000.0));
        assert_eq!(
            c.to_map()
                .get("pnfs_ds_ops_total{ds=\"2\",op=\"OP_READ\",status=\"ok\"}"),
            Some(&100.0)
        );
    }

    #[test]
    fn counters_refuse_malformed_lines_naming_the_line() {
        for (bad, why) in [
            ("pnfs_x{op=\"a\"", "unterminated"),
            ("pnfs_x{op=a} 1", "not quoted"),
            ("pnfs_x{op=\"a} 1", "unterminated value"),
            ("pnfs_x 1x", "bad value"),
            ("pnfs_x", "no value"),
            ("pnfs_x{} ", "no value"),
            ("pn-fs 1", "bad metric name"),
            ("pnfs_x{o-p=\"a\"} 1", "bad label name"),
        ] {
            let e = Counters::parse(&format!("# c\n{bad}\n")).unwrap_err();
            assert!(e.starts_with("line 2: ") && e.contains(why), "{bad}: {e}");
        }
    }
}
