//! The arithmetic of a benchmark report: latency percentiles over the requests of a phase,
//! and the median, minimum and maximum of its throughput across runs.
//!
//! Kept apart from the measuring so it can be checked exactly on made-up samples.

use std::time::Duration;

/// Percentile `p` (0 < p <= 100) of `sorted` (ascending) by the nearest-rank method: the
/// smallest sample with at least `p` % of the samples at or below it. Nearest-rank returns a
/// sample that was measured (no interpolation between two requests that never took the
/// interpolated time), and p100 is the maximum. `None` for no samples.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let p = p.clamp(0.0, 100.0);
    // The rank is ceil(p/100 * n), at least 1; computed in integers for the exact cases
    // (p50 of 10 samples is the 5th, not the 6th through a rounding error).
    let n = sorted.len();
    let rank = ((p * n as f64) / 100.0).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// The latency percentiles a report shows for a phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Latency {
    /// Requests measured (over every run).
    pub samples: usize,
    /// Median request.
    pub p50: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Slowest request.
    pub max: Duration,
}

impl Latency {
    /// The percentiles of `samples` (any order); `None` when there are none.
    pub(crate) fn of(samples: &[Duration]) -> Option<Latency> {
        let mut s = samples.to_vec();
        s.sort_unstable();
        Some(Latency {
            samples: s.len(),
            p50: percentile(&s, 50.0)?,
            p90: percentile(&s, 90.0)?,
            p99: percentile(&s, 99.0)?,
            max: *s.last()?,
        })
    }
}

/// Median, minimum and maximum of one figure over the runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spread {
    /// The middle run; with an even number of runs, the mean of the two middle ones.
    pub median: f64,
    /// The lowest run.
    pub min: f64,
    /// The highest run.
    pub max: f64,
}

impl Spread {
    /// Over `runs` (any order); `None` when there are none or one is not a number.
    pub(crate) fn of(runs: &[f64]) -> Option<Spread> {
        if runs.is_empty() || runs.iter().any(|v| v.is_nan()) {
            return None;
        }
        let mut s = runs.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: s[0],
            max: s[n - 1],
        })
    }
}

/// A / B of two medians: `None` when B is 0 (nothing to compare with).
pub(crate) fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0 && a.is_finite() && b.is_finite()).then(|| a / b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn nearest_rank_percentiles() {
        let s = ms(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        let at = |p| percentile(&s, p).unwrap().as_millis();
        assert_eq!(at(50.0), 5);
        assert_eq!(at(90.0), 9);
        assert_eq!(at(99.0), 10);
        assert_eq!(at(100.0), 10);
        assert_eq!(at(0.0), 1, "p0 is the smallest sample");
        assert_eq!(at(10.0), 1);
        assert_eq!(at(11.0), 2);
        let one = ms(&[7]);
        for p in [0.0, 50.0, 99.0, 100.0] {
            assert_eq!(percentile(&one, p).unwrap().as_millis(), 7);
        }
        assert_eq!(percentile(&[], 50.0), None);
        // 100 samples 1..=100: p99 is the 99th.
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&ms(&hundred), 99.0).unwrap().as_millis(), 99);
    }

    #[test]
    fn latency_sorts_its_samples_first() {
        let l = Latency::of(&ms(&[9, 1, 5, 3, 7, 2, 8, 4, 10, 6])).unwrap();
        assert_eq!(l.samples, 10);
        assert_eq!(l.p50, Duration::from_millis(5));
        assert_eq!(l.p90, Duration::from_millis(9));
        assert_eq!(l.p99, Duration::from_millis(10));
        assert_eq!(l.max, Duration::from_millis(10));
        assert_eq!(Latency::of(&[]), None);
    }

    #[test]
    fn median_min_max_over_runs() {
        assert_eq!(
            Spread::of(&[3.0, 1.0, 2.0]),
            Some(Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0
            })
        );
        assert_eq!(Spread::of(&[4.0, 1.0, 2.0, 10.0]).unwrap().median, 3.0);
        assert_eq!(
            Spread::of(&[5.0]),
            Some(Spread {
                median: 5.0,
                min: 5.0,
                max: 5.0
            })
        );
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn ratio_needs_a_nonzero_denominator() {
        assert_eq!(ratio(3.0, 2.0), Some(1.5));
        assert_eq!(ratio(3.0, 0.0), None);
        assert_eq!(ratio(0.0, 2.0), Some(0.0));
    }
}
