//! Pure pod state machine (placeholder until implemented).
