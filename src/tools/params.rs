//! Reading a tool's arguments object: required and optional parameters by type, with
//! `ToolError::InvalidParams` messages that name the parameter. Knows no tool.

use serde_json::{Map, Value};

use super::{ToolError, ToolSchema};

/// The arguments of one call, checked against the tool's schema for unknown names.
pub(crate) struct Params<'a> {
    tool: String,
    map: &'a Map<String, Value>,
}

impl<'a> Params<'a> {
    /// Checks that `args` is an object whose keys the schema knows.
    pub(crate) fn new(args: &'a Value, schema: &ToolSchema) -> Result<Self, ToolError> {
        let Value::Object(map) = args else {
            return Err(ToolError::InvalidParams(format!(
                "{}: arguments must be a JSON object, got: {args}",
                schema.name
            )));
        };
        for key in map.keys() {
            if !schema.parameters.iter().any(|p| &p.name == key) {
                let known: Vec<&str> = schema.parameters.iter().map(|p| p.name.as_str()).collect();
                return Err(ToolError::InvalidParams(format!(
                    "{}: unknown parameter `{key}`; expected: {}",
                    schema.name,
                    known.join(", ")
                )));
            }
        }
        Ok(Params {
            tool: schema.name.clone(),
            map,
        })
    }

    /// The value, treating JSON `null` as absent.
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    fn missing(&self, name: &str, ty: &str) -> ToolError {
        ToolError::InvalidParams(format!(
            "{}: missing required parameter `{name}` ({ty})",
            self.tool
        ))
    }

    fn wrong(&self, name: &str, ty: &str, got: &Value) -> ToolError {
        let mut shown = got.to_string();
        if shown.len() > 80 {
            let end = crate::text::shorten(&shown, 80).len();
            shown.truncate(end);
            shown.push('…');
        }
        ToolError::InvalidParams(format!(
            "{}: parameter `{name}` must be {ty}, got: {shown}",
            self.tool
        ))
    }

    /// A required string.
    pub(crate) fn string(&self, name: &str) -> Result<&'a str, ToolError> {
        self.opt_string(name)?.ok_or_else(|| self.missing(name, "string"))
    }

    /// A required string that must not be empty.
    pub(crate) fn non_empty_string(&self, name: &str) -> Result<&'a str, ToolError> {
        let s = self.string(name)?;
        if s.is_empty() {
            return Err(ToolError::InvalidParams(format!(
                "{}: parameter `{name}` must not be empty",
                self.tool
            )));
        }
        Ok(s)
    }

    pub(crate) fn opt_string(&self, name: &str) -> Result<Option<&'a str>, ToolError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(other) => Err(self.wrong(name, "a string", other)),
        }
    }

    /// An optional boolean; also accepts the strings "true" and "false", which models send.
    pub(crate) fn opt_bool(&self, name: &str) -> Result<Option<bool>, ToolError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(other) => Err(self.wrong(name, "a boolean", other)),
        }
    }

    /// An optional integer ≥ `min`; also accepts a string of digits and whole floats.
    pub(crate) fn opt_u64(&self, name: &str, min: u64) -> Result<Option<u64>, ToolError> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let n = match v {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        let what = if min == 0 {
            "a non-negative integer".to_string()
        } else {
            format!("an integer ≥ {min}")
        };
        match n {
            Some(n) if n >= min => Ok(Some(n)),
            _ => Err(self.wrong(name, &what, v)),
        }
    }
}

/// The arguments of a tool whose code ikigai does not read (an external tool), checked
/// against its schema as the built-ins check theirs: an object, every required parameter
/// present, each declared parameter of its type (a string of digits becomes the integer,
/// "true"/"false" the boolean, as models send them), a value among the `enum` a full
/// JSON Schema gives, and no unknown name unless that schema allows more properties.
/// Returns the arguments to pass on.
pub(crate) fn checked(args: &Value, schema: &ToolSchema) -> Result<Value, ToolError> {
    let open = schema
        .json_schema
        .as_ref()
        .is_some_and(|s| s.get("additionalProperties") != Some(&Value::Bool(false)));
    let map = match args {
        Value::Object(map) if open => map,
        _ => Params::new(args, schema)?.map,
    };
    let p = Params {
        tool: schema.name.clone(),
        map,
    };
    let mut out = map.clone();
    for spec in &schema.parameters {
        let Some(v) = p.get(&spec.name) else {
            if spec.required {
                return Err(p.missing(&spec.name, &spec.param_type));
            }
            continue;
        };
        let name = spec.name.as_str();
        let coerced = match spec.param_type.as_str() {
            "string" => p.string(name).map(|s| Value::String(s.to_string()))?,
            "boolean" => p.opt_bool(name)?.map(Value::Bool).unwrap_or_default(),
            "integer" => match v {
                Value::Number(n) if n.is_i64() => v.clone(),
                _ => p.opt_u64(name, 0)?.map(Value::from).unwrap_or_default(),
            },
            "number" => match v {
                Value::Number(_) => v.clone(),
                Value::String(s) => s
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| p.wrong(name, "a number", v))?,
                _ => return Err(p.wrong(name, "a number", v)),
            },
            "array" if !v.is_array() => return Err(p.wrong(name, "an array", v)),
            "object" if !v.is_object() => return Err(p.wrong(name, "an object", v)),
            _ => v.clone(),
        };
        let allowed = schema
            .json_schema
            .as_ref()
            .and_then(|s| s.pointer(&format!("/properties/{name}/enum")))
            .and_then(Value::as_array);
        if let Some(allowed) = allowed
            && !allowed.contains(&coerced)
        {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(p.wrong(name, &format!("one of {}", list.join(", ")), v));
        }
        out.insert(spec.name.clone(), coerced);
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ParamSpec;
    use serde_json::json;

    fn schema() -> ToolSchema {
        ToolSchema {
            name: "t".into(),
            description: String::new(),
            parameters: vec![
                ParamSpec::new("path", "string", "", true),
                ParamSpec::new("offset", "integer", "", false),
                ParamSpec::new("all", "boolean", "", false),
            ],
            json_schema: None,
        }
    }

    fn err(e: ToolError) -> String {
        assert_eq!(e.code(), crate::tools::ErrorCode::InvalidParams);
        e.to_string()
    }

    #[test]
    fn reads_each_type_and_names_bad_parameters() {
        let s = schema();
        let args = json!({"path": "a", "offset": 3, "all": "true"});
        let p = Params::new(&args, &s).unwrap();
        assert_eq!(p.string("path").unwrap(), "a");
        assert_eq!(p.opt_u64("offset", 1).unwrap(), Some(3));
        assert_eq!(p.opt_bool("all").unwrap(), Some(true));

        let args = json!({"offset": null});
        let p = Params::new(&args, &s).unwrap();
        assert_eq!(p.opt_u64("offset", 1).unwrap(), None);
        assert!(err(p.string("path").unwrap_err()).contains("missing required parameter `path`"));

        let args = json!({"path": 5, "offset": 0, "all": 2});
        let p = Params::new(&args, &s).unwrap();
        assert!(err(p.string("path").unwrap_err()).contains("`path` must be a string, got: 5"));
        assert!(err(p.opt_u64("offset", 1).unwrap_err()).contains("`offset` must be an integer ≥ 1"));
        assert!(err(p.opt_bool("all").unwrap_err()).contains("`all` must be a boolean"));

        let args = json!({"file_path": "x"});
        let e = Params::new(&args, &s).err().unwrap();
        assert!(err(e).contains("unknown parameter `file_path`; expected: path, offset, all"));
        let args = json!([1]);
        assert!(Params::new(&args, &s).is_err());
    }

    #[test]
    fn an_external_tools_arguments_are_checked_against_its_schema() {
        let s = schema();
        assert!(err(checked(&json!({}), &s).unwrap_err()).contains("missing required parameter `path`"));
        assert!(
            err(checked(&json!({"path": "a", "x": 1}), &s).unwrap_err()).contains("unknown parameter `x`")
        );
        assert!(err(checked(&json!({"path": 3}), &s).unwrap_err()).contains("`path` must be a string"));
        assert!(err(checked(&json!({"path": "a", "offset": "x"}), &s).unwrap_err()).contains("`offset`"));
        assert_eq!(
            checked(&json!({"path": "a", "offset": "3", "all": "true"}), &s).unwrap(),
            json!({"path": "a", "offset": 3, "all": true})
        );
        let full = ToolSchema {
            json_schema: Some(
                json!({"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"]}}}),
            ),
            parameters: vec![ParamSpec::new("mode", "string", "", true)],
            ..schema()
        };
        assert!(err(checked(&json!({"mode": "c"}), &full).unwrap_err()).contains("one of \"a\", \"b\""));
        // A full JSON Schema allows other properties unless it says otherwise.
        assert_eq!(
            checked(&json!({"mode": "a", "extra": 1}), &full).unwrap(),
            json!({"mode": "a", "extra": 1})
        );
    }
}
