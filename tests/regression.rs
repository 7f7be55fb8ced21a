//! Regression tests for what the fuzz targets (`fuzz/`, `bulkwatch::fuzzing`)
//! found outside the engine modules' own unit tests. Each names the target
//! and the committed input in `fixtures/fuzz/<target>/`.

#[path = "../fuzz/checks.rs"]
#[allow(dead_code)]
mod fuzzing;

use bulkwatch::config::Config;

/// config target, fixtures/fuzz/config/nan-threshold.toml: TOML has `nan`,
/// and the range check (`v < lo || v > hi`) let it through, so
/// `bulk_threshold = nan` silently made nothing bulk and
/// `weak_match_weight = nan` counted weak matches as zero.
#[test]
fn nan_thresholds_are_refused_by_key() {
    for key in ["bulk_threshold", "suspect_threshold", "weak_match_weight"] {
        for v in ["nan", "+nan", "-nan", "inf", "-inf"] {
            let toml = format!("[thresholds]\n{key} = {v}\n");
            let err = Config::from_toml_str(&toml).expect_err(&toml);
            assert_eq!(
                err.key(),
                Some(format!("thresholds.{key}").as_str()),
                "{toml}"
            );
        }
    }
    let toml = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/fuzz/config/nan-threshold.toml"),
    )
    .expect("committed input");
    assert!(Config::from_toml_str(&toml).is_err());
    fuzzing::config(toml.as_bytes());
}
