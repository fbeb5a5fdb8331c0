//! `tfjob-operator render`: the children a TFJob would get, as a YAML stream. Pure.
