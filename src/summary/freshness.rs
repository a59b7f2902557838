//! When a summary may stand in for the lists: only while its controller is known to keep it.
//!
//! The controller renews `renewedAt` at least every few seconds, and stops renewing when it
//! loses its watches or its Lease. So a summary is trusted while
//! `-maxClockSkew <= now - renewedAt <= maxSummaryAge`: one renewed slightly in the future is
//! the skew between the controller's clock and policy-server's; one far in the future would
//! keep a dead controller's summary trusted for ever, so it is not. `now` is the WASI clock
//! the engine gives the module.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// How old (and how far ahead) a summary may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trust {
    pub max_age: SignedDuration,
    pub max_skew: SignedDuration,
}

/// Why a summary is not trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Untrusted {
    #[error(
        "renewed {age:#} ago, past the {max:#} a summary may be old (is its controller running?)"
    )]
    Stale {
        age: SignedDuration,
        max: SignedDuration,
    },
    #[error("renewed {ahead:#} in the future, past the {max:#} of clock skew allowed")]
    Ahead {
        ahead: SignedDuration,
        max: SignedDuration,
    },
}

/// The clock a write reads: the WASI clock in the engine, the system's natively. A clock
/// before 1970 or past jiff's range reads as the epoch, so that no summary is trusted.
pub fn now() -> Timestamp {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|since| i128::try_from(since.as_nanos()).ok())
        .and_then(|nanos| Timestamp::from_nanosecond(nanos).ok())
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

impl Trust {
    /// Whether a summary renewed at `renewed` may be read at `now`.
    pub fn judge(&self, renewed: Timestamp, now: Timestamp) -> Result<(), Untrusted> {
        // To the millisecond, as it is shown.
        let age = SignedDuration::from_millis(
            i64::try_from(now.duration_since(renewed).as_millis()).unwrap_or(i64::MAX),
        );
        if age > self.max_age {
            return Err(Untrusted::Stale {
                age,
                max: self.max_age,
            });
        }
        if -age > self.max_skew {
            return Err(Untrusted::Ahead {
                ahead: -age,
                max: self.max_skew,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const NOW: &str = "2026-12-07T21:00:00Z";

    #[rstest]
    #[case::just_renewed("2026-12-07T21:00:00Z", None)]
    #[case::at_the_limit("2026-12-07T20:59:30Z", None)]
    #[case::skewed_within("2026-12-07T21:00:10Z", None)]
    #[case::a_millisecond_too_old(
        "2026-12-07T20:59:29.999Z",
        Some(
            "renewed 30s 1ms ago, past the 30s a summary may be old (is its controller running?)"
        )
    )]
    #[case::a_dead_controller(
        "2026-12-07T20:00:00Z",
        Some("renewed 1h ago, past the 30s a summary may be old (is its controller running?)")
    )]
    #[case::too_far_ahead(
        "2026-12-07T21:00:10.5Z",
        Some("renewed 10s 500ms in the future, past the 10s of clock skew allowed")
    )]
    #[case::the_far_future(
        "2099-01-01T00:00:00Z",
        Some("renewed 631731h in the future, past the 10s of clock skew allowed")
    )]
    fn a_summary_is_trusted_only_while_renewed(
        #[case] renewed: &str,
        #[case] refused: Option<&str>,
    ) {
        let trust = Trust {
            max_age: SignedDuration::from_secs(30),
            max_skew: SignedDuration::from_secs(10),
        };
        let verdict = trust.judge(renewed.parse().unwrap(), NOW.parse().unwrap());
        assert_eq!(verdict.map_err(|e| e.to_string()).err().as_deref(), refused);
    }
}
