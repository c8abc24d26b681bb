//! The `[fluid]` table: how `qstp fluid` solves the scenario's fluid model (Free & Stunts §III).
//! `qstp run` reads and checks it too, and otherwise ignores it, so that one file serves both.

use super::fields::{FieldResult, Fields};
use qstp_fluid::FluidParams;

/// The table's values, the defaults where it gives none (or there is no table).
pub(crate) fn fluid(f: Option<Fields>) -> FieldResult<FluidParams> {
    let defaults = FluidParams::default();
    let Some(mut f) = f else {
        return Ok(defaults);
    };
    let step = f.opt_duration("step")?.unwrap_or(defaults.step);
    if step.is_zero() {
        return Err(f.error("step", "must be positive"));
    }
    let margin = f.opt_bool("margin")?.unwrap_or(defaults.margin);
    f.finish()?;
    Ok(FluidParams { step, margin })
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Overrides};
    use qstp_proto::Duration;

    const BASE: &str = r#"
name = "f"
duration = "10s"
[bottleneck]
rate = "10M"
queue = { kind = "red", limit = 40, curve = [10, 40, 0.1] }
[[group]]
name = "A"
protocol = "tcp"
rtt = "100ms"
"#;

    #[test]
    fn the_table_is_read_checked_and_defaulted() {
        let plan = |extra: &str| parse(&format!("{BASE}{extra}"), "f.toml", &Overrides::default());
        let s = plan("").unwrap().points[0].scenario.fluid;
        assert_eq!(s, qstp_fluid::FluidParams::default());
        let s = plan("[fluid]\nstep = \"500us\"\nmargin = true\n")
            .unwrap()
            .points[0]
            .scenario
            .fluid;
        assert_eq!((s.step, s.margin), (Duration::from_micros(500), true));
        let err = plan("[fluid]\nstep = \"0s\"\n").unwrap_err().to_string();
        assert!(err.contains("fluid.step"), "{err}");
        let err = plan("[fluid]\nstepp = \"1ms\"\n").unwrap_err().to_string();
        assert!(err.contains("fluid.stepp"), "{err}");
    }
}
