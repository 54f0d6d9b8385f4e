//! Numbers and units as users type them: parse_int must never panic (no
//! overflow, no slicing inside a UTF-8 character), and whatever it accepts
//! must be consistent with the range-checked parsers and lists built on it.
#![no_main]

use blobbench::util::units;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = units::parse_int(text);
    if let Ok(v) = parsed {
        assert_eq!(units::positive_u64(text).is_ok(), v >= 1);
        assert_eq!(units::non_negative_i64(text).ok(), (v >= 0).then_some(v));
    }
    let _ = units::positive_u32(text);
    let _ = units::page_size(text);
    let _ = units::seconds(text);
    if let Ok(list) = units::parse_list(text, units::parse_int) {
        assert_eq!(list.len(), text.split(',').count());
    }
});
