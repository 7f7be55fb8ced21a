//! The text of pictures of text (image spam: a campaign's text drawn into
//! a picture, each copy with its own offset, size, colours and speckles,
//! which defeat a perceptual hash), read by Tesseract.
//!
//! Tesseract is not linked: its library (Debian's `libtesseract5`, with
//! the language data of `tesseract-ocr-eng`) is loaded when a process
//! starts reading, by [`start`], and only if it is installed. A worker does
//! it before its sandbox closes (the library and its data are files): it
//! maps the library and reads the language's model into memory; the
//! recognizer is made from that memory at the first picture (most workers
//! never read one, and making it costs about 0.1 s of CPU), and opens
//! nothing. Without the library every
//! picture is read as before (its perceptual hash and QR codes) and the
//! start-up log says why. This keeps the build free of a C++ tool chain
//! and the package free of a hard dependency (it recommends the two
//! packages).
//!
//! **Bounds.** The reader (`bulkwatch_read::ocr`) decides what is read:
//! only pictures under a short text, at most `MAX_PICTURES` pictures and
//! `MAX_PIXELS` pixels a message, stopped by Tesseract's own monitor when
//! the message's pictures have taken `DEADLINE_MS`. That monitor is not
//! looked at in every phase (layout analysis of a dense page can run past
//! it), so the daemon's clock is the bound: it kills an OCR worker that
//! overruns the message's time and counts it. Recognition runs on one
//! thread (`OMP_THREAD_LIMIT=1` in the process's environment from its
//! start); text read with a mean
//! confidence under [`MIN_CONFIDENCE`] (a photograph, noise) is dropped.
//!
//! What a sender gains by triggering it: a picture's text is compared like
//! a body's text, as an attached document's is; its cost per message is
//! bounded as above.

#![deny(unsafe_op_in_unsafe_fn)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

pub use bulkwatch_read::ocr::Recognized;
use bulkwatch_read::ocr::Recognizer;

/// Least mean confidence (0–100) of a picture's text kept.
pub const MIN_CONFIDENCE: c_int = 60;
/// Longest text kept from one picture, in bytes.
const MAX_TEXT: usize = 16 * 1024;

/// Where the language data is looked for when none is named: Debian's
/// Tesseract 5 and 4, and the usual places of a build from source.
pub const DATA_DIRS: &[&str] = &[
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
];
/// The library's names, newest first.
const LIBRARIES: &[&str] = &["libtesseract.so.5", "libtesseract.so.4", "libtesseract.so"];

type Create = unsafe extern "C-unwind" fn() -> *mut c_void;
type Init3 = unsafe extern "C-unwind" fn(*mut c_void, *const c_char, *const c_char) -> c_int;
type SetVariable = unsafe extern "C-unwind" fn(*mut c_void, *const c_char, *const c_char) -> c_int;
type SetPageSegMode = unsafe extern "C-unwind" fn(*mut c_void, c_int);
type SetImage = unsafe extern "C-unwind" fn(*mut c_void, *const u8, c_int, c_int, c_int, c_int);
type Recognize = unsafe extern "C-unwind" fn(*mut c_void, *mut c_void) -> c_int;
type GetUtf8Text = unsafe extern "C-unwind" fn(*mut c_void) -> *mut c_char;
type MeanTextConf = unsafe extern "C-unwind" fn(*mut c_void) -> c_int;
type Clear = unsafe extern "C-unwind" fn(*mut c_void);
type DeleteText = unsafe extern "C-unwind" fn(*mut c_char);
type MonitorCreate = unsafe extern "C-unwind" fn() -> *mut c_void;
type MonitorDelete = unsafe extern "C-unwind" fn(*mut c_void);
type MonitorSetDeadline = unsafe extern "C-unwind" fn(*mut c_void, c_int);
type Delete = unsafe extern "C-unwind" fn(*mut c_void);
type Init5 = unsafe extern "C-unwind" fn(
    *mut c_void,
    *const c_char,
    c_int,
    *const c_char,
    c_int,
    *mut *mut c_char,
    c_int,
    *mut *mut c_char,
    *mut *mut c_char,
    usize,
    c_int,
) -> c_int;
type Version = unsafe extern "C-unwind" fn() -> *const c_char;

/// The entry points of Tesseract's C API used here.
struct Api {
    create: Create,
    init3: Init3,
    init5: Init5,
    set_variable: SetVariable,
    set_psm: SetPageSegMode,
    set_image: SetImage,
    recognize: Recognize,
    get_utf8_text: GetUtf8Text,
    mean_text_conf: MeanTextConf,
    clear: Clear,
    delete_text: DeleteText,
    monitor_create: MonitorCreate,
    monitor_delete: MonitorDelete,
    monitor_set_deadline: MonitorSetDeadline,
    delete: Delete,
}

/// A loaded Tesseract (one instance, used under a lock).
struct Engine {
    api: Api,
    /// The recognizer, made at the first picture (null before, or when
    /// that failed: `failed`).
    handle: *mut c_void,
    /// The language's model, read before the sandbox, for the first
    /// picture to initialize from (most workers never see one: making
    /// the recognizer costs 0.1 s of CPU, a worker reads 1,000 messages).
    model: Vec<u8>,
    languages: CString,
    failed: bool,
    /// Keeps the functions above mapped.
    _library: libloading::Library,
}

impl Engine {
    /// The recognizer, made from `model` the first time.
    fn recognizer(&mut self) -> Option<*mut c_void> {
        if !self.handle.is_null() {
            return Some(self.handle);
        }
        if self.failed {
            return None;
        }
        let a = &self.api;
        let size = c_int::try_from(self.model.len()).ok()?;
        // SAFETY: `model` outlives the call (Tesseract copies what it
        // keeps); null lists with zero sizes are allowed.
        unsafe {
            let handle = (a.create)();
            if handle.is_null() {
                self.failed = true;
                return None;
            }
            let ok = (a.init5)(
                handle,
                self.model.as_ptr().cast(),
                size,
                self.languages.as_ptr(),
                3, // OEM_DEFAULT
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                0,
            ) == 0;
            if !ok {
                (a.delete)(handle);
                self.failed = true;
                return None;
            }
            configure(a, handle);
            self.handle = handle;
        }
        self.model = Vec::new();
        Some(self.handle)
    }
}

/// The settings every recognizer gets.
///
/// # Safety
/// `handle` is an initialized recognizer of `a`'s library.
unsafe fn configure(a: &Api, handle: *mut c_void) {
    // SAFETY: as the function's.
    unsafe {
        // A resolution, so that it is not estimated (and written to
        // standard error) for every picture.
        let _ = (a.set_variable)(handle, c"user_defined_dpi".as_ptr(), c"150".as_ptr());
        // Not each doubtful line again inverted (two fifths of the time of
        // a page of text): light text on a dark ground is inverted by the
        // caller, once a picture.
        let _ = (a.set_variable)(handle, c"tessedit_do_invert".as_ptr(), c"0".as_ptr());
        // Its notes ("Detected 9 diacritics") not on standard error where
        // the file can be opened (a worker's sandbox forbids it; the
        // daemon drains a worker's standard error).
        let _ = (a.set_variable)(handle, c"debug_file".as_ptr(), c"/dev/null".as_ptr());
        (a.set_psm)(handle, 3); // PSM_AUTO: pages of blocks, no orientation.
    }
}

// The handle is used only under ENGINE's lock, by one thread at a time,
// which Tesseract allows.
unsafe impl Send for Engine {}

static ENGINE: OnceLock<Mutex<Option<Engine>>> = OnceLock::new();

fn engine() -> Option<std::sync::MutexGuard<'static, Option<Engine>>> {
    ENGINE
        .get()
        .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()))
}

/// What [`start`] found, for the start-up log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Reading pictures of text: Tesseract's version and the data used.
    On { version: String, data: PathBuf },
    /// Not available, and why.
    Unavailable(String),
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::On { version, data } => {
                write!(f, "on (tesseract {version}, {})", data.display())
            }
            Status::Unavailable(why) => write!(f, "unavailable ({why})"),
        }
    }
}

/// The language data directory to use: `data` when it is given, else the
/// first of [`DATA_DIRS`] that holds each of `languages` (`eng+deu`).
pub fn data_dir(data: Option<&Path>, languages: &str) -> Result<PathBuf, String> {
    let missing = |dir: &Path| {
        languages
            .split('+')
            .find(|l| !dir.join(format!("{l}.traineddata")).is_file())
            .map(str::to_owned)
    };
    match data {
        Some(d) => match missing(d) {
            None => Ok(d.to_owned()),
            Some(l) => Err(format!(
                "{} does not hold {l}.traineddata (apt install tesseract-ocr-{l})",
                d.display()
            )),
        },
        None => DATA_DIRS
            .iter()
            .map(Path::new)
            .find(|d| missing(d).is_none())
            .map(Path::to_owned)
            .ok_or_else(|| {
                format!(
                    "no {languages} language data in {} (apt install tesseract-ocr-<language>)",
                    DATA_DIRS.join(" or ")
                )
            }),
    }
}

/// Loads Tesseract with `languages` from `data` (see [`data_dir`]) for
/// this process, once: later calls say what the first did. A sandboxed
/// process calls it before its sandbox closes, with `OMP_THREAD_LIMIT=1`
/// in its environment (Debian's library runs OpenMP threads, which a
/// system call filter may forbid).
pub fn start(data: Option<&Path>, languages: &str) -> &'static Status {
    static STARTED: OnceLock<Status> = OnceLock::new();
    STARTED.get_or_init(|| match load(data, languages) {
        Ok((engine, status)) => {
            let _ = ENGINE.set(Mutex::new(Some(engine)));
            status
        }
        Err(why) => Status::Unavailable(why),
    })
}

/// Whether pictures of text are read in this process.
pub fn available() -> bool {
    engine().is_some_and(|e| e.is_some())
}

/// Ends Tesseract in this process, before it exits (else the library's
/// own clean-up at exit warns of the models still held); pictures are
/// not read after it.
pub fn stop() {
    if let Some(mut e) = engine() {
        if let Some(e) = e.take().filter(|e| !e.handle.is_null()) {
            // SAFETY: the handle came from TessBaseAPICreate and is not
            // used after this.
            unsafe { (e.api.delete)(e.handle) };
        }
    }
}

/// The functions of `library` used here, and its version.
fn resolve(library: &libloading::Library) -> Result<(Api, String), String> {
    // SAFETY: each symbol has the type of its declaration in Tesseract's
    // capi.h (versions 4 and 5).
    unsafe {
        // A symbol may resolve to null (a weak one undefined): refused
        // before it is made a function.
        let sym = |name: &str| -> Result<*mut c_void, String> {
            library
                .get::<*mut c_void>(name.as_bytes())
                .map(|s| *s)
                .map_err(|e| format!("{name}: {e}"))
                .and_then(|p| {
                    if p.is_null() {
                        Err(format!("{name}: null"))
                    } else {
                        Ok(p)
                    }
                })
        };
        macro_rules! f {
            ($name:literal, $t:ty) => {
                std::mem::transmute::<*mut c_void, $t>(sym($name)?)
            };
        }
        let version = f!("TessVersion", Version);
        let api = Api {
            create: f!("TessBaseAPICreate", Create),
            init3: f!("TessBaseAPIInit3", Init3),
            init5: f!("TessBaseAPIInit5", Init5),
            set_variable: f!("TessBaseAPISetVariable", SetVariable),
            set_psm: f!("TessBaseAPISetPageSegMode", SetPageSegMode),
            set_image: f!("TessBaseAPISetImage", SetImage),
            recognize: f!("TessBaseAPIRecognize", Recognize),
            get_utf8_text: f!("TessBaseAPIGetUTF8Text", GetUtf8Text),
            mean_text_conf: f!("TessBaseAPIMeanTextConf", MeanTextConf),
            clear: f!("TessBaseAPIClear", Clear),
            delete_text: f!("TessDeleteText", DeleteText),
            monitor_create: f!("TessMonitorCreate", MonitorCreate),
            monitor_delete: f!("TessMonitorDelete", MonitorDelete),
            monitor_set_deadline: f!("TessMonitorSetDeadlineMSecs", MonitorSetDeadline),
            delete: f!("TessBaseAPIDelete", Delete),
        };
        // Leptonica's error notes (on pictures built to be odd) not on
        // standard error either: L_SEVERITY_NONE. Optional: not every
        // build exports it.
        if let Ok(quiet) = library.get::<*mut c_void>(b"setMsgSeverity") {
            if !(*quiet).is_null() {
                let quiet = std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C-unwind" fn(c_int) -> c_int,
                >(*quiet);
                quiet(6);
            }
        }
        let v = version();
        let version = if v.is_null() {
            String::from("?")
        } else {
            CStr::from_ptr(v).to_string_lossy().into_owned()
        };
        Ok((api, version))
    }
}

fn load(data: Option<&Path>, languages: &str) -> Result<(Engine, Status), String> {
    let dir = data_dir(data, languages)?;
    if languages.is_empty()
        || !languages
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'+')
    {
        return Err(format!("bad language list {languages:?}"));
    }
    let mut last = String::new();
    let library = LIBRARIES
        .iter()
        // SAFETY: Tesseract's initializers have no preconditions.
        .find_map(|name| match unsafe { libloading::Library::new(name) } {
            Ok(l) => Some(l),
            Err(e) => {
                last = e.to_string();
                None
            }
        })
        .ok_or_else(|| format!("libtesseract not found (apt install libtesseract5): {last}"))?;
    let (api, version) = resolve(&library)?;
    // One thread (Debian's library runs OpenMP, whose idle threads spin;
    // its explicit thread counts obey only OMP_THREAD_LIMIT, read when the
    // library loads): a worker has OMP_THREAD_LIMIT=1 in its environment
    // from its start, the binary sets it in `main` before its threads, and
    // this crate does not change the environment (other threads may be
    // reading it).
    // SAFETY: the functions are the library's (see `resolve`).
    unsafe {
        let langs = CString::new(languages).map_err(|e| e.to_string())?;
        let mut engine = Engine {
            api,
            handle: std::ptr::null_mut(),
            model: Vec::new(),
            languages: langs,
            failed: false,
            _library: library,
        };
        if languages.contains('+') {
            // Several models: Tesseract reads them from files, now.
            let a = &engine.api;
            let handle = (a.create)();
            let path =
                CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
            let failed = || format!("{} could not be loaded from {}", languages, dir.display());
            if handle.is_null() {
                return Err(failed());
            }
            if (a.init3)(handle, path.as_ptr(), engine.languages.as_ptr()) != 0 {
                (a.delete)(handle);
                return Err(failed());
            }
            configure(a, handle);
            engine.handle = handle;
        } else {
            // One model: read now, made into a recognizer at the first
            // picture.
            let file = dir.join(format!("{languages}.traineddata"));
            engine.model = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        }
        Ok((engine, Status::On { version, data: dir }))
    }
}

/// What Tesseract reads in the grey picture of `w` × `h` pixels
/// (`pixels`, a row after another), dark text on a light ground, stopped
/// after `deadline_ms`; nothing without Tesseract. The caller bounds the
/// picture's size (`bulkwatch_read::ocr::MAX_PIXELS`).
pub fn read(pixels: &[u8], w: u32, h: u32, deadline_ms: u32) -> Recognized {
    let Some(mut guard) = engine() else {
        return Recognized::default();
    };
    let Some(engine) = guard.as_mut() else {
        return Recognized::default();
    };
    let Some(handle) = engine.recognizer() else {
        return Recognized::default();
    };
    let (Ok(wi), Ok(hi)) = (c_int::try_from(w), c_int::try_from(h)) else {
        return Recognized::default();
    };
    if u64::from(w) * u64::from(h) != pixels.len() as u64 || w < 8 || h < 8 {
        return Recognized::default();
    }
    let a = &engine.api;
    // SAFETY: `pixels` holds w × h bytes and outlives the recognition
    // (Clear below releases Tesseract's reference to it); the text
    // returned is freed with TessDeleteText.
    unsafe {
        (a.set_image)(handle, pixels.as_ptr(), wi, hi, 1, wi);
        let monitor = (a.monitor_create)();
        if !monitor.is_null() {
            let ms = c_int::try_from(deadline_ms).unwrap_or(c_int::MAX);
            (a.monitor_set_deadline)(monitor, ms);
        }
        let ok = (a.recognize)(handle, monitor) == 0;
        let conf = (a.mean_text_conf)(handle);
        let raw = if ok {
            (a.get_utf8_text)(handle)
        } else {
            std::ptr::null_mut()
        };
        let text = (!raw.is_null()).then(|| {
            let bytes = CStr::from_ptr(raw).to_bytes();
            let kept = bytes.get(..bytes.len().min(MAX_TEXT)).unwrap_or(bytes);
            String::from_utf8_lossy(kept).into_owned()
        });
        if !raw.is_null() {
            (a.delete_text)(raw);
        }
        (a.clear)(handle);
        if !monitor.is_null() {
            (a.monitor_delete)(monitor);
        }
        Recognized {
            text: text.filter(|t| conf >= MIN_CONFIDENCE && !t.trim().is_empty()),
            stopped: !ok,
            remembered: false,
        }
    }
}

/// Tesseract as the reader's recognizer (`bulkwatch_read::ocr::provide`),
/// once [`start`] loaded it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tesseract;

impl Recognizer for Tesseract {
    fn recognize(&self, pixels: &[u8], w: u32, h: u32, deadline_ms: u32) -> Recognized {
        read(pixels, w, h, deadline_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_dir_needs_every_language() {
        let dir = std::env::temp_dir().join(format!("bulkwatch-ocr-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("eng.traineddata"), b"x").unwrap();
        assert_eq!(data_dir(Some(&dir), "eng"), Ok(dir.clone()));
        let e = data_dir(Some(&dir), "eng+deu").unwrap_err();
        assert!(e.contains("does not hold deu.traineddata"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn nothing_is_read_without_a_started_engine() {
        // (This test process never calls `start`.)
        assert!(!available());
        assert_eq!(read(&[0; 64 * 64], 64, 64, 100), Recognized::default());
        stop();
    }
}
