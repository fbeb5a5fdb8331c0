//! Column definitions and cell values shared by the Table printers: NAME and AGE columns,
//! reading strings from objects, and apimachinery's human-readable durations (pure).

use jiff::Timestamp;
use serde_json::{Value, json};

/// Computes a row's cells from an object.
pub(super) type Cells<'a> = Box<dyn Fn(&Value) -> Vec<Value> + 'a>;

pub(super) const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
pub(super) const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

pub(super) fn column(
    name: &str,
    type_: &str,
    format: &str,
    description: &str,
    priority: i32,
) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority})
}

pub(super) fn name_column() -> Value {
    column("Name", "string", "name", NAME_DESCRIPTION, 0)
}

pub(super) fn age_column() -> Value {
    column("Age", "string", "", AGE_DESCRIPTION, 0)
}
pub(super) fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub(super) fn name_of(obj: &Value) -> Value {
    json!(str_at(obj, "/metadata/name"))
}

/// kubectl's `translateTimestampSince`: "<unknown>" without a timestamp.
pub(super) fn age(timestamp: &str, now: Timestamp) -> String {
    match timestamp.parse::<Timestamp>() {
        Ok(t) => human_duration(now.as_nanosecond() - t.as_nanosecond()),
        Err(_) => "<unknown>".to_string(),
    }
}

/// apimachinery's `duration.HumanDuration`, exactly: ~2-3 significant figures.
pub(super) fn human_duration(nanos: i128) -> String {
    let seconds = nanos / 1_000_000_000;
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    let days = hours / 24;
    match hours {
        h if h < 8 => match minutes % 60 {
            0 => format!("{h}h"),
            m => format!("{h}h{m}m"),
        },
        h if h < 48 => format!("{h}h"),
        h if h < 24 * 8 => match h % 24 {
            0 => format!("{days}d"),
            rem => format!("{days}d{rem}h"),
        },
        h if h < 24 * 365 * 2 => format!("{days}d"),
        h if h < 24 * 365 * 8 => match days % 365 {
            0 => format!("{}y", days / 365),
            dy => format!("{}y{dy}d", days / 365),
        },
        _ => format!("{}y", days / 365),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_duration_matches_apimachinery() {
        let s = 1_000_000_000i128;
        let (m, h, d) = (60 * s, 3600 * s, 86400 * s);
        let cases = [
            (-3 * s, "<invalid>"),
            (-s - 1, "0s"),
            (0, "0s"),
            (59 * s, "59s"),
            (119 * s, "119s"),
            (2 * m, "2m"),
            (2 * m + 3 * s, "2m3s"),
            (9 * m + 59 * s, "9m59s"),
            (10 * m + 5 * s, "10m"),
            (179 * m, "179m"),
            (3 * h, "3h"),
            (3 * h + 5 * m, "3h5m"),
            (8 * h + 5 * m, "8h"),
            (47 * h, "47h"),
            (2 * d, "2d"),
            (2 * d + 5 * h, "2d5h"),
            (8 * d + 5 * h, "8d"),
            (729 * d, "729d"),
            (730 * d, "2y"),
            (731 * d, "2y1d"),
            (8 * 365 * d, "8y"),
        ];
        for (nanos, want) in cases {
            assert_eq!(human_duration(nanos), want, "{nanos}ns");
        }
    }
}
