//! Sizes on the command line (`--size 256MiB`, `--commit-every 64M`).

/// A size: bytes, or a number with K, KiB, M, MiB, G, GiB, T, TiB (any case; all powers of
/// 1024, as `dd` and `fio` read `1M`); `KB`, `MB` and `GB` are taken as the same.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let bad = || format!("{s:?} is not a size (bytes, or a number with K, M, G, T, KiB, MiB, ...)");
    if digits.is_empty() {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("2 GiB"), Ok(2 << 30));
        assert_eq!(parse_size("0"), Ok(0));
        for bad in ["", "MiB", "1.5M", "-1", "4 bytes", "1X"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_size("99999999999T")
            .unwrap_err()
            .contains("too large"));
    }
}
