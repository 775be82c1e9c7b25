//! NVML field values (`nvmlDeviceGetFieldValues`) with a scope id, which
//! nvml-wrapper 0.13 does not expose: NVLink throughput is read per link.

use super::error::read_error;
use crate::backend::{ReadError, Reading};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{
    nvmlFieldValue_t, nvmlValueType_enum_NVML_VALUE_TYPE_DOUBLE as DOUBLE,
    nvmlValueType_enum_NVML_VALUE_TYPE_SIGNED_INT as SIGNED_INT,
    nvmlValueType_enum_NVML_VALUE_TYPE_SIGNED_LONG_LONG as SIGNED_LONG_LONG,
    nvmlValueType_enum_NVML_VALUE_TYPE_UNSIGNED_INT as UNSIGNED_INT,
    nvmlValueType_enum_NVML_VALUE_TYPE_UNSIGNED_LONG as UNSIGNED_LONG,
    nvmlValueType_enum_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG as UNSIGNED_LONG_LONG,
    nvmlValueType_enum_NVML_VALUE_TYPE_UNSIGNED_SHORT as UNSIGNED_SHORT,
};
use nvml_wrapper_sys::bindings::{nvmlReturn_enum_NVML_SUCCESS, nvmlValue_t};

pub use nvml_wrapper_sys::bindings::field_id::{
    NVML_FI_DEV_MEMORY_TEMP, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
};

/// One field to read: its id and scope (the link for NVLink fields, else 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldRequest {
    /// `NVML_FI_*` id. Only ids below 251 are used: NVML renumbered some above that.
    pub field: u32,
    /// Link or other sub-unit the field refers to.
    pub scope: u32,
}

/// A decoded field value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldValue {
    /// Floating-point value.
    Float(f64),
    /// Integer value (NVML's unsigned types, and non-negative signed ones).
    Unsigned(u64),
}

impl FieldValue {
    /// The value as a float, whatever its type.
    pub fn as_f64(self) -> f64 {
        match self {
            Self::Float(v) => v,
            Self::Unsigned(v) => v as f64,
        }
    }

    /// The value as an integer, where it is one.
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Self::Unsigned(v) => Some(v),
            Self::Float(_) => None,
        }
    }
}

/// Decodes NVML's tagged union. Negative integers mean "not available" for
/// the fields we read.
fn decode(value_type: u32, value: nvmlValue_t) -> Option<FieldValue> {
    // SAFETY: NVML sets `valueType` to the member of the union it wrote.
    unsafe {
        match value_type {
            DOUBLE => Some(FieldValue::Float(value.dVal)),
            UNSIGNED_INT => Some(FieldValue::Unsigned(u64::from(value.uiVal))),
            UNSIGNED_LONG => Some(FieldValue::Unsigned(value.ulVal)),
            UNSIGNED_LONG_LONG => Some(FieldValue::Unsigned(value.ullVal)),
            UNSIGNED_SHORT => Some(FieldValue::Unsigned(u64::from(value.usVal))),
            SIGNED_LONG_LONG => u64::try_from(value.sllVal).ok().map(FieldValue::Unsigned),
            SIGNED_INT => u64::try_from(value.siVal).ok().map(FieldValue::Unsigned),
            _ => None,
        }
    }
}

/// Reads several fields in one driver call. The outer error fails the whole call;
/// each inner one is that field's own status.
pub fn read(
    nvml: &Nvml,
    device: &Device<'_>,
    requests: &[FieldRequest],
) -> Reading<Vec<Reading<FieldValue>>> {
    if requests.is_empty() {
        return Ok(Vec::new());
    }
    let get = nvml
        .lib()
        .nvmlDeviceGetFieldValues
        .as_ref()
        .map_err(|_| ReadError::NotSupported)?;
    let count = i32::try_from(requests.len())
        .map_err(|_| ReadError::Failed("too many NVML fields in one call".into()))?;
    let mut values: Vec<nvmlFieldValue_t> = requests
        .iter()
        .map(|r| {
            // SAFETY: the struct is plain data; all-zero is a valid value.
            let mut v: nvmlFieldValue_t = unsafe { std::mem::zeroed() };
            v.fieldId = r.field;
            v.scopeId = r.scope;
            v
        })
        .collect();
    // SAFETY: `values` holds `count` initialised entries and outlives the call; the
    // device handle comes from the same loaded library.
    let status = unsafe { get(device.handle(), count, values.as_mut_ptr()) };
    if status != nvmlReturn_enum_NVML_SUCCESS {
        return Err(read_error(NvmlError::from(status)));
    }
    Ok(values
        .into_iter()
        .map(|v| {
            if v.nvmlReturn != nvmlReturn_enum_NVML_SUCCESS {
                return Err(read_error(NvmlError::from(v.nvmlReturn)));
            }
            decode(v.valueType, v.value).ok_or(ReadError::NotSupported)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_each_integer_width_and_doubles() {
        let mut v: nvmlValue_t = unsafe { std::mem::zeroed() };
        v.ullVal = 5_000_000_000;
        assert_eq!(
            decode(UNSIGNED_LONG_LONG, v),
            Some(FieldValue::Unsigned(5_000_000_000))
        );
        let mut v: nvmlValue_t = unsafe { std::mem::zeroed() };
        v.uiVal = 71;
        assert_eq!(decode(UNSIGNED_INT, v), Some(FieldValue::Unsigned(71)));
        let mut v: nvmlValue_t = unsafe { std::mem::zeroed() };
        v.dVal = 1.5;
        assert_eq!(decode(DOUBLE, v).map(FieldValue::as_f64), Some(1.5));
    }

    #[test]
    fn negative_and_unknown_types_are_not_values() {
        let mut v: nvmlValue_t = unsafe { std::mem::zeroed() };
        v.sllVal = -1;
        assert_eq!(decode(SIGNED_LONG_LONG, v), None);
        let v: nvmlValue_t = unsafe { std::mem::zeroed() };
        assert_eq!(decode(99, v), None);
    }
}
