//! The syntax of a failure rule's line, piece by piece: lists, exit codes, words, blanks and
//! quotes, each read as strictly as the admission policy's CEL checks it (`config/admission`).
//! Pure.

use crate::crd::field_error::FieldError;

/// `[a, b, ...]`, each item read by `item`; problems named `path[i]`.
pub(super) fn list<T>(
    path: &str,
    value: &str,
    item: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, Vec<FieldError>> {
    let inner = value.strip_prefix('[').and_then(|v| v.strip_suffix(']'));
    let Some(inner) = inner else {
        let hint = format!("Invalid value: {value:?}: a list, written [a, b]");
        return Err(vec![FieldError::new(path, hint)]);
    };
    let items: Vec<&str> = inner.split(',').map(unquote).collect();
    if items.iter().all(|s| s.is_empty()) {
        return Err(vec![FieldError::new(
            path,
            "Required value: an empty list matches nothing",
        )]);
    }
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, s) in items.iter().enumerate() {
        match item(s) {
            Ok(v) => out.push(v),
            Err(m) => errors.push(FieldError::new(format!("{path}[{i}]"), m)),
        }
    }
    match errors.is_empty() {
        true => Ok(out),
        false => Err(errors),
    }
}

/// An exit code, `137`, or an inclusive range, `129-255`, within 0–255 (at most 3 digits).
pub(super) fn exit_codes(s: &str) -> Result<(i32, i32), String> {
    let digits = |n: &str| (1..=3).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit());
    let code = |n: &str| {
        let c = n.parse::<i32>().ok().filter(|_| digits(n));
        c.filter(|c| (0..=255).contains(c))
    };
    let range = match s.split_once('-') {
        Some((a, b)) => code(a).zip(code(b)).filter(|(a, b)| a <= b),
        None => code(s).map(|c| (c, c)),
    };
    range.ok_or_else(|| {
        format!("Invalid value: {s:?}: an exit code 0-255, or a range such as 129-255")
    })
}

/// The items of a flow mapping's body, split at the commas outside brackets.
pub(super) fn split_top(body: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in body.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(blank(&body[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(blank(&body[start..]));
    items.retain(|s| !s.is_empty());
    items
}

/// Without the spaces and tabs around it (the only blanks a rule's line may hold inside).
pub(super) fn blank(s: &str) -> &str {
    s.trim_matches([' ', '\t'])
}

pub(super) fn blank_start(s: &str) -> &str {
    s.trim_start_matches([' ', '\t'])
}

/// A scalar without its double quotes, if it has them.
pub(super) fn unquote(s: &str) -> &str {
    let s = blank(s);
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
}

pub(super) fn is_word(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric())
}

pub(super) fn unsupported(value: &str, supported: &[&str]) -> String {
    let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    format!(
        "Unsupported value: {value:?}: supported values: {}",
        supported.join(", ")
    )
}
