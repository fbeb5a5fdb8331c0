//! Request paths and query strings of the Kubernetes API, parsed (pure).
use std::collections::BTreeMap;

/// A resource path: `/api/v1/...` or `/apis/<group>/<version>/...`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Version,
    Health,
    Api,
    Apis,
    Group(String),
    GroupVersion { group: String, version: String },
    OpenApi(OpenApi),
    Resource(ResourcePath),
    NotFound,
}

/// The OpenAPI documents kubectl reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenApi {
    V2,
    V3Root,
    /// `/openapi/v3/<api/v1 | apis/g/v>`
    V3(String),
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let mut p = ResourcePath {
        group: group.into(),
        version: version.into(),
        ..Default::default()
    };
    let s = |i: usize| rest.get(i).map(|x| x.to_string());
    match rest {
        ["namespaces", ns, sub] if *sub == "status" || *sub == "finalize" => {
            p.plural = "namespaces".into();
            p.name = Some(ns.to_string());
            p.sub = Some(sub.to_string());
        }
        ["namespaces", ns, plural, ..] if rest.len() <= 5 => {
            p.namespace = Some(ns.to_string());
            p.plural = plural.to_string();
            p.name = s(3);
            p.sub = s(4);
        }
        [plural, ..] if rest.len() <= 3 => {
            p.plural = plural.to_string();
            p.name = s(1);
            p.sub = s(2);
        }
        _ => return Route::NotFound,
    }
    Route::Resource(p)
}

pub fn parse(path: &str) -> Route {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match segs.as_slice() {
        ["version"] => Route::Version,
        ["healthz"] | ["readyz"] | ["livez"] => Route::Health,
        ["api"] => Route::Api,
        ["api", v] => Route::GroupVersion {
            group: String::new(),
            version: v.to_string(),
        },
        ["api", v, rest @ ..] => resource("", v, rest),
        ["apis"] => Route::Apis,
        ["apis", g] => Route::Group(g.to_string()),
        ["apis", g, v] => Route::GroupVersion {
            group: g.to_string(),
            version: v.to_string(),
        },
        ["apis", g, v, rest @ ..] => resource(g, v, rest),
        ["openapi", "v2"] => Route::OpenApi(OpenApi::V2),
        ["openapi", "v3"] => Route::OpenApi(OpenApi::V3Root),
        ["openapi", "v3", rest @ ..] => Route::OpenApi(OpenApi::V3(rest.join("/"))),
        _ => Route::NotFound,
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Decoded query parameters (the last value wins).
#[derive(Clone, Debug, Default)]
pub struct Query(BTreeMap<String, String>);

impl Query {
    pub fn parse(q: Option<&str>) -> Self {
        let mut m = BTreeMap::new();
        for pair in q.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            m.insert(percent_decode(k), percent_decode(v));
        }
        Self(m)
    }
    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str).filter(|v| !v.is_empty())
    }
    pub fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("true" | "1"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(
        group: &str,
        plural: &str,
        ns: Option<&str>,
        name: Option<&str>,
        sub: Option<&str>,
    ) -> Route {
        Route::Resource(ResourcePath {
            group: group.into(),
            version: "v1".into(),
            plural: plural.into(),
            namespace: ns.map(String::from),
            name: name.map(String::from),
            sub: sub.map(String::from),
        })
    }

    #[test]
    fn parses_paths() {
        let cases = [
            ("/api/v1/pods", res("", "pods", None, None, None)),
            (
                "/api/v1/namespaces",
                res("", "namespaces", None, None, None),
            ),
            (
                "/api/v1/namespaces/a",
                res("", "namespaces", None, Some("a"), None),
            ),
            (
                "/api/v1/namespaces/a/status",
                res("", "namespaces", None, Some("a"), Some("status")),
            ),
            (
                "/api/v1/namespaces/a/pods",
                res("", "pods", Some("a"), None, None),
            ),
            (
                "/api/v1/namespaces/a/pods/p/status",
                res("", "pods", Some("a"), Some("p"), Some("status")),
            ),
            (
                "/apis/x.io/v1/namespaces/a/things/t",
                res("x.io", "things", Some("a"), Some("t"), None),
            ),
            (
                "/apis/x.io/v1/clusterthings/t",
                res("x.io", "clusterthings", None, Some("t"), None),
            ),
            ("/apis/x.io", Route::Group("x.io".into())),
            (
                "/api/v1",
                Route::GroupVersion {
                    group: "".into(),
                    version: "v1".into(),
                },
            ),
            (
                "/openapi/v3/apis/x.io/v1",
                Route::OpenApi(OpenApi::V3("apis/x.io/v1".into())),
            ),
            ("/nope", Route::NotFound),
        ];
        for (path, want) in cases {
            assert_eq!(parse(path), want, "{path}");
        }
    }

    #[test]
    fn decodes_queries() {
        let q = Query::parse(Some("labelSelector=a%3Db%2Cc+in+(x)&watch=1&empty="));
        assert_eq!(q.get("labelSelector"), Some("a=b,c in (x)"));
        assert!(q.flag("watch"));
        assert_eq!(q.get("empty"), None);
    }
}
