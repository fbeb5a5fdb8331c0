//! The record of one document's conversion, written as YAML comments above it. Pure.

/// What happened to one field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// Moved or renamed: `from -> to`, with why when it is not obvious.
    Changed(String),
    /// Taken out: no `kubeflow.org/v1` equivalent, or written by the server; says why.
    Dropped(String),
    /// Converted, but the result behaves differently or needs a look.
    Check(String),
}

/// The notes of one document, in the order they were made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Notes(pub Vec<Note>);

impl Notes {
    pub fn changed(&mut self, text: impl Into<String>) {
        self.0.push(Note::Changed(text.into()));
    }

    pub fn dropped(&mut self, text: impl Into<String>) {
        self.0.push(Note::Dropped(text.into()));
    }

    pub fn check(&mut self, text: impl Into<String>) {
        self.0.push(Note::Check(text.into()));
    }

    /// Notes asking for a look.
    pub fn checks(&self) -> usize {
        self.0
            .iter()
            .filter(|n| matches!(n, Note::Check(_)))
            .count()
    }

    /// The comment block: a heading, then the notes grouped as changed, dropped, check.
    pub fn comment(&self, heading: &str) -> String {
        let mut out = format!("# {heading}\n");
        for (title, group) in [("Changed:", 0), ("Dropped:", 1), ("Check:", 2)] {
            let lines: Vec<&String> = self
                .0
                .iter()
                .filter_map(|n| match n {
                    Note::Changed(t) if group == 0 => Some(t),
                    Note::Dropped(t) if group == 1 => Some(t),
                    Note::Check(t) if group == 2 => Some(t),
                    _ => None,
                })
                .collect();
            if lines.is_empty() {
                continue;
            }
            out.push_str(&format!("# {title}\n"));
            for line in lines {
                out.push_str(&format!("#   - {line}\n"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_groups_notes() {
        let mut n = Notes::default();
        n.check("c");
        n.changed("a -> b");
        n.dropped("x: why");
        n.changed("d -> e");
        assert_eq!(
            n.comment("Converted"),
            "# Converted\n# Changed:\n#   - a -> b\n#   - d -> e\n# Dropped:\n#   - x: why\n# Check:\n#   - c\n"
        );
        assert_eq!(n.checks(), 1);
        assert_eq!(Notes::default().comment("H"), "# H\n");
    }
}
