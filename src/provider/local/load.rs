//! Loading a GGUF model: checks that give clear errors (missing file, not a GGUF, too big
//! for memory, unsupported architecture), the process-wide llama.cpp backend, and the
//! model itself. Does not create contexts or generate.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use llama_cpp_2::gguf::GgufContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;

/// Why a model could not be loaded; every message names the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("model file {0} does not exist")]
    Missing(PathBuf),
    #[error("cannot read model file {path}: {message}")]
    Unreadable { path: PathBuf, message: String },
    #[error("{0} is not a GGUF model file (it does not start with the GGUF magic)")]
    NotGguf(PathBuf),
    #[error("{0} is not a valid GGUF file (its header cannot be parsed; truncated or damaged?)")]
    BadGguf(PathBuf),
    #[error("model file {path} is too big for memory: {size_mib} MiB, only {available_mib} MiB available")]
    TooBig {
        path: PathBuf,
        size_mib: u64,
        available_mib: u64,
    },
    #[error(
        "llama.cpp cannot load {path}: architecture `{arch}` is not supported by this build (or the file is damaged)"
    )]
    UnsupportedArchitecture { path: PathBuf, arch: String },
    #[error("llama.cpp cannot load {path}: {message}")]
    Failed { path: PathBuf, message: String },
}

/// The llama.cpp backend, initialised once per process (llama.cpp allows only one).
pub fn backend() -> Result<&'static LlamaBackend, String> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut b = LlamaBackend::init().map_err(|e| format!("cannot start llama.cpp: {e}"))?;
            // llama.cpp logs to stderr, which would draw over the TUI.
            if crate::environ::var_os("IKIGAI_LLAMA_LOG").is_none() {
                b.void_logs();
            }
            Ok(b)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// What the checks learned about the file before llama.cpp loads it.
#[derive(Clone, Debug)]
pub struct FileInfo {
    pub size: u64,
    pub architecture: Option<String>,
    /// `general.name`, or the file stem.
    pub name: String,
}

/// Checks the file without loading its tensors.
pub fn inspect(path: &Path) -> Result<FileInfo, LoadError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => m,
        Ok(_) => return Err(LoadError::NotGguf(path.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LoadError::Missing(path.to_path_buf()));
        }
        Err(e) => {
            return Err(LoadError::Unreadable {
                path: path.to_path_buf(),
                message: e.to_string(),
            });
        }
    };
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic));
    if read.is_err() || &magic != b"GGUF" {
        return Err(LoadError::NotGguf(path.to_path_buf()));
    }
    if let Some(available) = available_memory() {
        // The weights are mapped, not copied, but they must fit to run at any useful speed.
        if meta.len() > available {
            return Err(LoadError::TooBig {
                path: path.to_path_buf(),
                size_mib: meta.len() >> 20,
                available_mib: available >> 20,
            });
        }
    }
    let gguf = GgufContext::from_file(path).ok_or_else(|| LoadError::BadGguf(path.to_path_buf()))?;
    let stem = path
        .file_stem()
        .map_or_else(|| "model".to_string(), |s| s.to_string_lossy().into_owned());
    Ok(FileInfo {
        size: meta.len(),
        architecture: meta_str(&gguf, "general.architecture"),
        name: meta_str(&gguf, "general.name").unwrap_or(stem),
    })
}

/// A string value of the GGUF header, when the key exists and holds a string.
fn meta_str(gguf: &GgufContext, key: &str) -> Option<String> {
    /// `GGUF_TYPE_STRING` in gguf.h (reading another type as a string aborts).
    const GGUF_TYPE_STRING: u32 = 8;
    let idx = gguf.find_key(key);
    if idx < 0 || gguf.kv_type(idx) != GGUF_TYPE_STRING {
        return None;
    }
    gguf.val_str(idx).map(str::to_string)
}

/// MemAvailable from /proc/meminfo, in bytes.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Checks, then loads the weights (memory-mapped).
pub fn load_model(path: &Path, gpu_layers: u32) -> Result<(LlamaModel, FileInfo), LoadError> {
    let info = inspect(path)?;
    let backend = backend().map_err(|message| LoadError::Failed {
        path: path.to_path_buf(),
        message,
    })?;
    let params = LlamaModelParams::default().with_n_gpu_layers(gpu_layers);
    match LlamaModel::load_from_file(backend, path, &params) {
        Ok(model) => Ok((model, info)),
        Err(e) => Err(match &info.architecture {
            Some(arch) => LoadError::UnsupportedArchitecture {
                path: path.to_path_buf(),
                arch: arch.clone(),
            },
            None => LoadError::Failed {
                path: path.to_path_buf(),
                message: e.to_string(),
            },
        }),
    }
}
