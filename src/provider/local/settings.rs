//! Settings of the in-process engine (`[providers.local]`) and their defaults. Pure data:
//! no loading, no llama.cpp.

use std::path::PathBuf;

/// How the engine loads and samples.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalSettings {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// Context window in tokens (`ctx`, default 8192).
    pub ctx: u32,
    /// CPU threads for generation and prompt processing (default: physical cores).
    pub threads: u32,
    /// Layers offloaded to a GPU (default 0; this build has no GPU backend).
    pub gpu_layers: u32,
    /// 0 (the default) means greedy, deterministic: with the 0.5B test model it passed
    /// 6 of the 14 eval tasks where 0.2 passed 4 (README, "A local model inside ikigai").
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u32,
    /// Most tokens one response may generate.
    pub max_output_tokens: u32,
    /// Constrained decoding: once an exec tag is open, sample under its grammar
    /// (default on; off only to measure what it costs).
    pub constrain: bool,
    /// Replaces the exec-tag grammar built from the tools (tests: a grammar llama.cpp
    /// rejects, a grammar that allows one command).
    pub exec_grammar: Option<String>,
}

pub const DEFAULT_CTX: u32 = 8192;
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 2048;

impl LocalSettings {
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        LocalSettings {
            model_path: model_path.into(),
            ctx: DEFAULT_CTX,
            threads: physical_cores(),
            gpu_layers: 0,
            temperature: 0.0,
            top_p: 0.95,
            seed: 0,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            constrain: true,
            exec_grammar: None,
        }
    }
}

/// Physical cores (unique core ids per package in /proc/cpuinfo); logical CPUs elsewhere.
pub fn physical_cores() -> u32 {
    let logical = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return logical;
    };
    let mut cores = std::collections::HashSet::new();
    let mut package = "";
    for line in info.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "physical id" => package = value.trim(),
            "core id" => {
                cores.insert((package.to_string(), value.trim().to_string()));
            }
            _ => {}
        }
    }
    // Containers may see fewer CPUs than the package has cores.
    match cores.len() as u32 {
        0 => logical,
        n => n.min(logical).max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_ones() {
        let s = LocalSettings::new("/m.gguf");
        assert_eq!(s.ctx, 8192);
        assert_eq!(s.gpu_layers, 0);
        assert_eq!(s.temperature, 0.0, "greedy: the better default for tool use");
        assert!(s.constrain);
        assert!(s.threads >= 1);
        assert!(s.threads <= std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    }
}
