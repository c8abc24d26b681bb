//! `[sweep]`: dotted keys into the document, each with a list of values; every combination is a
//! point. In a path, an array of tables is indexed by the `name` of its element
//! (`group.AB.protocol`, `bottleneck.queue.classes.pipe.rate`) or by a number. Keys joined with
//! `+` (`"group.A.protocol+group.B.protocol"`) move together: each value is set at every one.
//! Keys joined with `,` (`"bottleneck.rate,group.X.flows" = [["40M", 10], ["80M", 20]]`) move
//! together too, each value a list with one element per key, set in order.

use super::fields::FieldError;
use toml::{Table, Value};

/// Most points a sweep may produce: a bound on the work one file can ask for.
pub(crate) const MAX_POINTS: usize = 10_000;

/// One swept key and its values, in the order written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axis {
    pub key: String,
    pub values: Vec<Value>,
}

/// Read the `[sweep]` table (keys quoted `"a.b" = [...]` or nested `a.b = [...]`).
pub(crate) fn axes(sweep: Table) -> Result<Vec<Axis>, FieldError> {
    let mut out = Vec::new();
    flatten("", sweep, &mut out)?;
    let points = out
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()));
    match points {
        Some(n) if n <= MAX_POINTS => Ok(out),
        _ => Err(FieldError::new(
            "sweep",
            format!("more than {MAX_POINTS} points"),
        )),
    }
}

fn flatten(prefix: &str, table: Table, out: &mut Vec<Axis>) -> Result<(), FieldError> {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Table(t) => flatten(&key, t, out)?,
            Value::Array(values) if !values.is_empty() => {
                let zipped = key.split(',').count();
                if zipped > 1 {
                    let fits = |v: &Value| v.as_array().is_some_and(|a| a.len() == zipped);
                    if let Some(bad) = values.iter().find(|v| !fits(v)) {
                        return Err(FieldError::new(
                            format!("sweep.{key}"),
                            format!(
                                "keys joined with ',' take lists of {zipped} values (one per key), found {bad}"
                            ),
                        ));
                    }
                }
                out.push(Axis { key, values })
            }
            Value::Array(_) => {
                return Err(FieldError::new(
                    format!("sweep.{key}"),
                    "needs at least one value",
                ))
            }
            other => {
                return Err(FieldError::new(
                    format!("sweep.{key}"),
                    format!("expected an array of values, found {}", other.type_str()),
                ))
            }
        }
    }
    Ok(())
}

/// Every combination of the axes' values, the first axis varying slowest; one empty combination
/// when there is nothing to sweep.
pub(crate) fn combinations(axes: &[Axis]) -> Vec<Vec<(String, Value)>> {
    let mut points: Vec<Vec<(String, Value)>> = vec![Vec::new()];
    for axis in axes {
        points = points
            .into_iter()
            .flat_map(|p| {
                axis.values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((axis.key.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    points
}

/// Every `(key, value)` one swept value sets: `+` gives each key the whole value, `,` each key
/// its element of the value (checked by [`axes`]).
pub(crate) fn assignments(key: &str, value: &Value) -> Vec<(String, Value)> {
    if key.contains(',') {
        let values = value.as_array().cloned().unwrap_or_default();
        key.split(',')
            .map(str::trim)
            .zip(values)
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    } else {
        key.split('+')
            .map(|k| (k.to_string(), value.clone()))
            .collect()
    }
}

/// The single keys a swept key names (joined with `+` or `,`).
pub(crate) fn parts(key: &str) -> impl Iterator<Item = &str> {
    key.split(['+', ',']).map(str::trim)
}

/// Set `key` (dotted) in `doc` to `value`. Every table and element on the way must exist; the last
/// key may be new (the typed reader refuses it later if the format does not know it).
pub(crate) fn apply(doc: &mut Table, key: &str, value: Value) -> Result<(), FieldError> {
    let parts: Vec<&str> = key.split('.').collect();
    let err = |reason: String| FieldError::new(format!("sweep.{key}"), reason);
    let (last, path) = parts.split_last().ok_or_else(|| err("empty key".into()))?;
    let mut table = doc;
    let mut walked = String::new();
    let mut i = 0;
    while i < path.len() {
        let part = path[i];
        let here = if walked.is_empty() {
            part.to_string()
        } else {
            format!("{walked}.{part}")
        };
        let next = table
            .get_mut(part)
            .ok_or_else(|| err(format!("'{here}' does not exist in the scenario")))?;
        match next {
            Value::Table(t) => {
                table = t;
                walked = here;
                i += 1;
            }
            Value::Array(items) => {
                let Some(&selector) = path.get(i + 1) else {
                    return Err(err(format!(
                        "'{here}' is a list: name an element, as in {here}.NAME.{last}"
                    )));
                };
                let element = find_element(items, selector)
                    .ok_or_else(|| err(format!("'{here}' has no element named '{selector}'")))?;
                let Value::Table(t) = element else {
                    return Err(err(format!("'{here}.{selector}' is not a table")));
                };
                table = t;
                walked = format!("{here}.{selector}");
                i += 2;
            }
            _ => return Err(err(format!("'{here}' is a value, not a table"))),
        }
    }
    table.insert((*last).to_string(), value);
    Ok(())
}

fn find_element<'a>(items: &'a mut [Value], selector: &str) -> Option<&'a mut Value> {
    if let Some(i) = items
        .iter()
        .position(|v| v.get("name").and_then(Value::as_str) == Some(selector))
    {
        return items.get_mut(i);
    }
    selector
        .parse::<usize>()
        .ok()
        .and_then(|i| items.get_mut(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Table {
        "duration = \"10s\"\n[bottleneck]\nrate = \"1M\"\n[[group]]\nname = \"AB\"\nprotocol = \"tcp\"\n\
         [[group]]\nname = \"CD\"\nflows = 15"
            .parse()
            .unwrap()
    }

    #[test]
    fn combinations_vary_the_last_axis_fastest() {
        let sweep: Table =
            "\"group.AB.protocol\" = [\"tcp\", \"qstp\"]\ngroup.CD.flows = [1, 2, 3]"
                .parse()
                .unwrap();
        let axes = axes(sweep).unwrap();
        assert_eq!(axes.len(), 2);
        let points = combinations(&axes);
        assert_eq!(points.len(), 6);
        assert_eq!(points[0][0].1.as_str(), Some("tcp"));
        assert_eq!(points[1][1].1.as_integer(), Some(2));
        assert_eq!(points[3][0].1.as_str(), Some("qstp"));
        assert_eq!(combinations(&[]), vec![Vec::new()]);
    }

    #[test]
    fn keys_joined_with_a_comma_take_one_element_each() {
        let sweep: Table = "\"bottleneck.rate,group.CD.flows\" = [[\"2M\", 4], [\"4M\", 8]]"
            .parse()
            .unwrap();
        let points = combinations(&axes(sweep).unwrap());
        assert_eq!(points.len(), 2);
        let set = assignments(&points[1][0].0, &points[1][0].1);
        assert_eq!(
            set[0],
            ("bottleneck.rate".into(), Value::String("4M".into()))
        );
        assert_eq!(set[1], ("group.CD.flows".into(), Value::Integer(8)));
        let mut d = doc();
        for (k, v) in set {
            apply(&mut d, &k, v).unwrap();
        }
        assert_eq!(d["group"][1]["flows"].as_integer(), Some(8));
        let err = axes("\"a,b\" = [[1, 2], [3]]".parse().unwrap()).unwrap_err();
        assert_eq!(err.key, "sweep.a,b");
        assert!(err.reason.contains("lists of 2 values"), "{}", err.reason);
        assert_eq!(parts("a.b+c,d").collect::<Vec<_>>(), ["a.b", "c", "d"]);
    }

    #[test]
    fn groups_are_addressed_by_name() {
        let mut d = doc();
        apply(&mut d, "group.CD.flows", Value::Integer(7)).unwrap();
        apply(&mut d, "bottleneck.rate", Value::String("2M".into())).unwrap();
        assert_eq!(d["group"][1]["flows"].as_integer(), Some(7));
        assert_eq!(d["bottleneck"]["rate"].as_str(), Some("2M"));
        apply(&mut d, "group.0.protocol", Value::String("qstp".into())).unwrap();
        assert_eq!(d["group"][0]["protocol"].as_str(), Some("qstp"));
    }

    #[test]
    fn missing_paths_are_refused_with_the_key() {
        let mut d = doc();
        let err = apply(&mut d, "group.XY.flows", Value::Integer(1)).unwrap_err();
        assert_eq!(err.key, "sweep.group.XY.flows");
        assert!(
            err.reason.contains("no element named 'XY'"),
            "{}",
            err.reason
        );
        let err = apply(&mut d, "link.rate", Value::Integer(1)).unwrap_err();
        assert!(err.reason.contains("'link' does not exist"));
        let err = apply(&mut d, "duration.x", Value::Integer(1)).unwrap_err();
        assert!(err.reason.contains("is a value"));
        let err = axes("\"group.AB.flows\" = 3".parse().unwrap()).unwrap_err();
        assert!(err.reason.contains("expected an array"));
    }
}
