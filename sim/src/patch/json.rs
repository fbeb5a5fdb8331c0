//! JSON patch (RFC 6902) with the semantics of the library kube-apiserver uses: a `test` whose
//! path is missing compares against `null` (kube-runtime's finalizer helper relies on it) and
//! negative array indices count from the end. Pure.

use serde_json::Value;

use super::error::PatchError;

/// Applies the operations of `patch` (a JSON array) to `target`. All or nothing: on error the
/// target is left unchanged.
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Array(ops) = patch else {
        return Err(PatchError::BadRequest(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch".to_string(),
        ));
    };
    let mut doc = target.clone();
    for op in ops {
        apply_op(&mut doc, op)?;
    }
    *target = doc;
    Ok(())
}

fn failed(msg: String) -> PatchError {
    PatchError::OperationFailed(msg)
}

fn string_field<'a>(op: &'a Value, name: &str) -> Result<&'a str, PatchError> {
    op.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| failed(format!("operation missing {name} field")))
}

fn apply_op(doc: &mut Value, op: &Value) -> Result<(), PatchError> {
    if !op.is_object() {
        return Err(PatchError::BadRequest(
            "json: cannot unmarshal into Go value of type jsonpatch.Operation".to_string(),
        ));
    }
    let kind = string_field(op, "op")?;
    let path = string_field(op, "path")?;
    let tokens = parse_pointer(path)?;
    // A missing `value` is null, as in the Go library.
    let value = op.get("value").cloned().unwrap_or(Value::Null);
    match kind {
        "add" => add(doc, &tokens, value, path),
        "remove" => remove(doc, &tokens, path).map(|_| ()),
        "replace" => replace(doc, &tokens, value, path),
        "move" => {
            let from = string_field(op, "from")?;
            let moved = remove(doc, &parse_pointer(from)?, from)?;
            add(doc, &tokens, moved, path)
        }
        "copy" => {
            let from = string_field(op, "from")?;
            let copied = get(doc, &parse_pointer(from)?).cloned().ok_or_else(|| {
                failed(format!(
                    "copy operation does not apply: doc is missing from path: {from}"
                ))
            })?;
            add(doc, &tokens, copied, path)
        }
        "test" => test(doc, &tokens, &value, path),
        other => Err(failed(format!("Unexpected kind: {other}"))),
    }
}

/// Splits a JSON pointer (`/a/b~1c`) into unescaped tokens; "" is the whole document.
fn parse_pointer(path: &str) -> Result<Vec<String>, PatchError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(failed(format!(
            "invalid JSON pointer: {path:?} does not start with '/'"
        )));
    };
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn get<'a>(doc: &'a Value, tokens: &[String]) -> Option<&'a Value> {
    tokens.iter().try_fold(doc, |cur, token| match cur {
        Value::Object(map) => map.get(token),
        Value::Array(items) => array_index(token, items.len(), false).and_then(|i| items.get(i)),
        _ => None,
    })
}

fn get_mut<'a>(doc: &'a mut Value, tokens: &[String]) -> Option<&'a mut Value> {
    tokens.iter().try_fold(doc, |cur, token| match cur {
        Value::Object(map) => map.get_mut(token),
        Value::Array(items) => {
            let i = array_index(token, items.len(), false)?;
            items.get_mut(i)
        }
        _ => None,
    })
}

/// Resolves an array index token; `-` (append) only when `for_insert`. Negative indices count
/// from the end. An index equal to `len` is valid only for insertion.
fn array_index(token: &str, len: usize, for_insert: bool) -> Option<usize> {
    if token == "-" {
        return for_insert.then_some(len);
    }
    let i: i64 = token.parse().ok()?;
    let len_i = i64::try_from(len).ok()?;
    let resolved = if i < 0 { i + len_i } else { i };
    let limit = if for_insert { len_i } else { len_i - 1 };
    (0..=limit)
        .contains(&resolved)
        .then(|| usize::try_from(resolved).ok())
        .flatten()
}

fn split_last(tokens: &[String]) -> Option<(&[String], &String)> {
    tokens.split_last().map(|(last, parent)| (parent, last))
}

fn add(doc: &mut Value, tokens: &[String], value: Value, path: &str) -> Result<(), PatchError> {
    let Some((parent_tokens, key)) = split_last(tokens) else {
        *doc = value;
        return Ok(());
    };
    let missing = || {
        failed(format!(
            "add operation does not apply: doc is missing path: {path:?}: missing value"
        ))
    };
    match get_mut(doc, parent_tokens).ok_or_else(missing)? {
        Value::Object(map) => {
            map.insert(key.clone(), value);
            Ok(())
        }
        Value::Array(items) => {
            let i = array_index(key, items.len(), true)
                .ok_or_else(|| failed(format!("Unable to access invalid index: {key}")))?;
            items.insert(i, value);
            Ok(())
        }
        _ => Err(missing()),
    }
}

fn remove(doc: &mut Value, tokens: &[String], path: &str) -> Result<Value, PatchError> {
    let missing = || {
        failed(format!(
            "remove operation does not apply: doc is missing path: {path:?}: missing value"
        ))
    };
    let (parent_tokens, key) = split_last(tokens).ok_or_else(missing)?;
    match get_mut(doc, parent_tokens).ok_or_else(missing)? {
        Value::Object(map) => map.remove(key).ok_or_else(missing),
        Value::Array(items) => {
            let i = array_index(key, items.len(), false).ok_or_else(missing)?;
            Ok(items.remove(i))
        }
        _ => Err(missing()),
    }
}

fn replace(doc: &mut Value, tokens: &[String], value: Value, path: &str) -> Result<(), PatchError> {
    let slot = get_mut(doc, tokens).ok_or_else(|| {
        failed(format!(
            "replace operation does not apply: doc is missing key: {path}: missing value"
        ))
    })?;
    *slot = value;
    Ok(())
}

/// A missing member reads as `null`; a missing parent is an error.
fn test(doc: &Value, tokens: &[String], expected: &Value, path: &str) -> Result<(), PatchError> {
    let actual = match split_last(tokens) {
        None => Some(doc),
        Some((parent_tokens, key)) => {
            match get(doc, parent_tokens) {
                Some(Value::Object(map)) => map.get(key),
                Some(Value::Array(items)) => {
                    let i = array_index(key, items.len(), false)
                    .ok_or_else(|| failed(format!("error in test for path: '{path}': Unable to access invalid index: {key}")))?;
                    items.get(i)
                }
                _ => {
                    return Err(failed(format!(
                        "test operation does not apply: is missing path: {path}"
                    )));
                }
            }
        }
    };
    if json_equal(actual.unwrap_or(&Value::Null), expected) {
        Ok(())
    } else {
        Err(failed(format!("testing value {path} failed: test failed")))
    }
}

/// Deep equality where numbers compare by value (`1` equals `1.0`), as after Go's decoding.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_table() {
        let base = json!({"a": {"b": 1}, "l": [1, 2, 3], "x~y": 0, "s/t": 0});
        let cases = [
            (
                json!([{"op":"add","path":"/a/c","value":2}]),
                json!({"a":{"b":1,"c":2},"l":[1,2,3],"x~y":0,"s/t":0}),
            ),
            (
                json!([{"op":"add","path":"/l/1","value":9}]),
                json!({"a":{"b":1},"l":[1,9,2,3],"x~y":0,"s/t":0}),
            ),
            (
                json!([{"op":"add","path":"/l/-","value":9}]),
                json!({"a":{"b":1},"l":[1,2,3,9],"x~y":0,"s/t":0}),
            ),
            (
                json!([{"op":"add","path":"/l/3","value":9}]),
                json!({"a":{"b":1},"l":[1,2,3,9],"x~y":0,"s/t":0}),
            ),
            (
                json!([{"op":"remove","path":"/l/0"}]),
                json!({"a":{"b":1},"l":[2,3],"x~y":0,"s/t":0}),
            ),
            (
                json!([{"op":"remove","path":"/l/-1"}]),
                json!({"a":{"b":1},"l":[1,2],"x~y":0,"s/t":0}),
            ),
            (
                json!([{"op":"remove","path":"/x~0y"},{"op":"remove","path":"/s~1t"}]),
                json!({"a":{"b":1},"l":[1,2,3]}),
            ),
            (
                json!([{"op":"replace","path":"/a/b","value":"v"}]),
                json!({"a":{"b":"v"},"l":[1,2,3],"x~y":0,"s/t":0}),
            ),
            (
                json!([{"op":"move","from":"/a/b","path":"/m"}]),
                json!({"a":{},"m":1,"l":[1,2,3],"x~y":0,"s/t":0}),
            ),
            (
                json!([{"op":"copy","from":"/l","path":"/a/l"}]),
                json!({"a":{"b":1,"l":[1,2,3]},"l":[1,2,3],"x~y":0,"s/t":0}),
            ),
            (
                json!([{"op":"test","path":"/a/b","value":1.0},{"op":"test","path":"/l","value":[1,2,3]}]),
                base.clone(),
            ),
            (
                json!([{"op":"replace","path":"","value":{"z":1}}]),
                json!({"z":1}),
            ),
        ];
        for (patch, want) in cases {
            let mut doc = base.clone();
            json_patch(&mut doc, &patch).unwrap_or_else(|e| panic!("{patch}: {e}"));
            assert_eq!(doc, want, "patch {patch}");
        }
    }

    #[test]
    fn test_on_missing_member_compares_against_null() {
        // kube-runtime's finalizer helper: add the first finalizer only if there is none yet.
        let patch = json!([
            {"op":"test","path":"/metadata/finalizers","value":null},
            {"op":"add","path":"/metadata/finalizers","value":["f"]}
        ]);
        let mut doc = json!({"metadata": {"name": "x"}});
        json_patch(&mut doc, &patch).expect("test null on missing path succeeds");
        assert_eq!(doc, json!({"metadata": {"name": "x", "finalizers": ["f"]}}));
        // The same patch now fails: finalizers exist, so the test against null fails.
        let err = json_patch(&mut doc, &patch).expect_err("second run must fail");
        assert_eq!(err.http_code(), 422);
        assert_eq!(
            err.to_string(),
            "testing value /metadata/finalizers failed: test failed"
        );
    }

    #[test]
    fn failures_are_422_and_leave_the_target_unchanged() {
        let base = json!({"a": {"b": 1}, "l": [1]});
        let cases = [
            (
                json!([{"op":"test","path":"/a/b","value":2}]),
                "testing value /a/b failed",
            ),
            (
                json!([{"op":"test","path":"/nope/b","value":null}]),
                "test operation does not apply: is missing path: /nope/b",
            ),
            (
                json!([{"op":"add","path":"/nope/b","value":1}]),
                "add operation does not apply",
            ),
            (
                json!([{"op":"add","path":"/l/5","value":1}]),
                "Unable to access invalid index: 5",
            ),
            (
                json!([{"op":"remove","path":"/zz"}]),
                "remove operation does not apply",
            ),
            (
                json!([{"op":"replace","path":"/zz","value":1}]),
                "replace operation does not apply",
            ),
            (
                json!([{"op":"add","path":"/a/c","value":1},{"op":"frobnicate","path":"/a"}]),
                "Unexpected kind: frobnicate",
            ),
            (
                json!([{"op":"add","value":1}]),
                "operation missing path field",
            ),
        ];
        for (patch, want) in cases {
            let mut doc = base.clone();
            let err = json_patch(&mut doc, &patch).expect_err("must fail");
            assert_eq!(err.http_code(), 422, "{patch}");
            assert!(err.to_string().contains(want), "{patch}: {err}");
            assert_eq!(doc, base, "target unchanged after {patch}");
        }
    }

    #[test]
    fn a_patch_that_is_not_an_array_is_a_bad_request() {
        let mut doc = json!({});
        let err = json_patch(&mut doc, &json!({"op": "add"})).expect_err("object patch");
        assert_eq!(err.http_code(), 400);
    }
}
