//! Proleptic Gregorian dates from day counts and back (Howard Hinnant's algorithms): the
//! date in the system prompt, the store's default titles, HTTP-date parsing, release dates.

/// Days from 1970-01-01 to a proleptic Gregorian date.
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date (year, month, day) `days` after 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days.saturating_add(719_468);
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// `YYYY-MM-DD` (UTC) of epoch milliseconds.
pub fn utc_date(epoch_ms: u64) -> String {
    let (year, month, day) = civil_from_days(i64::try_from(epoch_ms / 86_400_000).unwrap_or(i64::MAX));
    format!("{year:04}-{month:02}-{day:02}")
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of epoch milliseconds, like JavaScript's `toISOString`.
pub fn iso_time(epoch_ms: u64) -> String {
    let seconds = epoch_ms / 1000;
    let rest = seconds % 86_400;
    let (hour, minute, second) = (rest / 3600, (rest % 3600) / 60, rest % 60);
    format!("{}T{hour:02}:{minute:02}:{second:02}.{:03}Z", utc_date(epoch_ms), epoch_ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400_000), "2000-02-29");
        assert_eq!(utc_date(1_767_225_600_000), "2026-01-01");
        assert_eq!(iso_time(1_767_225_600_123 + 3_723_000), "2026-01-01T01:02:03.123Z");
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    proptest::proptest! {
        #[test]
        fn the_two_directions_agree(days in -1_000_000i64..1_000_000) {
            let (year, month, day) = civil_from_days(days);
            proptest::prop_assert_eq!(days_from_civil(year, month, day), days);
        }
    }
}
