//! CPU time spent in a phase: by the client (this process) and, when `--server-pids` and
//! `--compare-pids` name them, by the servers' processes on this machine, read from
//! `/proc/<pid>/stat` before and after each phase. What a gigabyte or an operation costs
//! each side is what tells a server that is faster from one that only has more cores to
//! burn, and what compares a data path with iperf3's CPU per gigabyte (docs/bench.md).
//!
//! The kernel counts in clock ticks (`USER_HZ`, a hundredth of a second), so a phase of a
//! second or more reads to within a few per cent; a phase of a tenth of a second does not
//! (use more `--files` or a larger `--size` for CPU figures). All threads count, those that
//! ended during the phase too.

use std::time::Duration;

/// Clock ticks per second in `/proc/<pid>/stat`: `USER_HZ`, fixed at 100 in the Linux ABI
/// of the architectures this runs on.
const USER_HZ: u64 = 100;

/// CPU time of one phase on one server, as far as it was measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Cpu {
    /// This process (the client library and the benchmark driving it).
    pub client: Option<Duration>,
    /// The server's processes named on the command line (none named: `None`).
    pub server: Option<Duration>,
}

/// The CPU counters when a phase began.
pub(crate) struct Start<'a> {
    server_pids: &'a [u32],
    client: Option<Duration>,
    server: Option<Duration>,
}

impl<'a> Start<'a> {
    /// Reads the counters of this process and of `server_pids` (may be empty).
    pub(crate) fn now(server_pids: &'a [u32]) -> Self {
        Start {
            server_pids,
            client: cpu_of(std::process::id()),
            server: cpu_of_all(server_pids),
        }
    }

    /// CPU spent since [`Self::now`]. A process that went away in between leaves its side
    /// unmeasured.
    pub(crate) fn spent(&self) -> Cpu {
        let since = |before: Option<Duration>, after: Option<Duration>| {
            Some(after?.saturating_sub(before?))
        };
        Cpu {
            client: since(self.client, cpu_of(std::process::id())),
            server: since(self.server, cpu_of_all(self.server_pids)),
        }
    }
}

/// User and system time of process `pid` so far (all its threads, ended ones included);
/// `None` when it cannot be read (no such process, no `/proc`).
pub(crate) fn cpu_of(pid: u32) -> Option<Duration> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The sum over `pids`; `None` for none, or when one cannot be read.
fn cpu_of_all(pids: &[u32]) -> Option<Duration> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|&p| cpu_of(p)).sum()
}

/// `utime` + `stime` of a `/proc/<pid>/stat` line (fields 14 and 15, proc(5)). The command
/// name (field 2) is in parentheses and may itself hold spaces and parentheses, so the
/// fields are counted from its last `)`.
fn parse_stat(line: &str) -> Option<Duration> {
    let rest = &line[line.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` begins with field 3 (the state).
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let ticks = utime.checked_add(stime)?;
    Some(Duration::from_millis(ticks.checked_mul(1000 / USER_HZ)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_user_plus_system_time() {
        let line = "4242 (tokio rt) worker)) S 1 4242 4242 0 -1 4194560 2045 0 0 0 \
                    153 47 0 0 20 0 9 0 123456 1000000 500 18446744073709551615";
        assert_eq!(parse_stat(line), Some(Duration::from_millis(2000)));
        assert_eq!(parse_stat("4242 (short) S 1 2 3"), None);
        assert_eq!(parse_stat("no name at all"), None);
        assert_eq!(
            parse_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 lots 1 0"),
            None,
            "a field that is not a number"
        );
    }

    #[test]
    fn this_process_is_measured_and_a_missing_one_is_not() {
        let me = cpu_of(std::process::id()).expect("/proc/self/stat");
        let busy = std::time::Instant::now();
        let mut x = 0u64;
        while busy.elapsed() < Duration::from_millis(60) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let later = cpu_of(std::process::id()).unwrap();
        assert!(later > me, "{me:?} then {later:?} after 60 ms of work");
        // Pid 0 is never a process in /proc.
        assert_eq!(cpu_of(0), None);
        let s = Start::now(&[0]);
        assert_eq!(s.spent().server, None);
        assert!(s.spent().client.is_some());
        assert_eq!(Start::now(&[]).spent().server, None);
    }
}
