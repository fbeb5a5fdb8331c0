//! Tokens of the label selector syntax and the validation of label keys and values (pure).

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Token {
    Ident(String),
    In,
    NotIn,
    Bang,
    NotEquals,
    Equals,
    DoubleEquals,
    Greater,
    Less,
    Comma,
    Open,
    Close,
    End,
}

impl Token {
    /// The literal the real parser quotes in its error messages.
    pub(super) fn literal(&self) -> &str {
        match self {
            Token::Ident(s) => s,
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Bang => "!",
            Token::NotEquals => "!=",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::Greater => ">",
            Token::Less => "<",
            Token::Comma => ",",
            Token::Open => "(",
            Token::Close => ")",
            Token::End => "",
        }
    }

    /// In value position the keywords `in`/`notin` are plain identifiers (`x in (in)`).
    pub(super) fn as_value(&self) -> Option<&str> {
        match self {
            Token::Ident(s) => Some(s),
            Token::In => Some("in"),
            Token::NotIn => Some("notin"),
            _ => None,
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

pub(super) fn lex(s: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if is_special(c) {
            let next = chars.get(i + 1).copied();
            let (token, len) = match (c, next) {
                ('!', Some('=')) => (Token::NotEquals, 2),
                ('=', Some('=')) => (Token::DoubleEquals, 2),
                ('!', _) => (Token::Bang, 1),
                ('=', _) => (Token::Equals, 1),
                ('>', _) => (Token::Greater, 1),
                ('<', _) => (Token::Less, 1),
                (',', _) => (Token::Comma, 1),
                ('(', _) => (Token::Open, 1),
                _ => (Token::Close, 1),
            };
            tokens.push(token);
            i += len;
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !is_special(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            tokens.push(match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Ident(word),
            });
        }
    }
    tokens.push(Token::End);
    Ok(tokens)
}

fn is_dns_label_like(s: &str, extra: &[char]) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    s.chars().next().is_some_and(alnum)
        && s.chars().last().is_some_and(alnum)
        && s.chars().all(|c| alnum(c) || extra.contains(&c))
}

/// `[prefix/]name`: name ≤ 63 chars of `[A-Za-z0-9_.-]`, prefix a DNS subdomain ≤ 253.
pub(super) fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        p.len() <= 253
            && is_dns_label_like(p, &['-', '.'])
            && p.chars().all(|c| !c.is_ascii_uppercase())
    });
    let name_ok = name.len() <= 63 && is_dns_label_like(name, &['-', '_', '.']);
    if prefix_ok && name_ok {
        return Ok(());
    }
    Err(format!(
        "Invalid value: \"{key}\": name part must consist of alphanumeric characters, '-', '_' \
         or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or \
         'my.name',  or '123-abc', regex used for validation is \
         '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    ))
}

pub(super) fn validate_label_value(key: &str, value: &str) -> Result<(), String> {
    if value.is_empty() || (value.len() <= 63 && is_dns_label_like(value, &['-', '_', '.'])) {
        return Ok(());
    }
    Err(format!(
        "values[0][{key}]: Invalid value: \"{value}\": a valid label must be an empty string or \
         consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
         alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for \
         validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    ))
}
