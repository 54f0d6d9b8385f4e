//! Result files as `report` reads them: any bytes must give a result or a
//! one-line error, never a panic; a file that parses must survive a round
//! trip through the writer's serialisation.
#![no_main]

use blobbench::results;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match results::parse("fuzz.json", text) {
        Ok(file) => {
            let again = serde_json::to_string(&file).expect("a parsed file serialises");
            results::parse("again.json", &again).expect("what blobbench writes, it reads back");
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "error is one line: {e}"),
    }
});
