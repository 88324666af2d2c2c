//! A deserializer adapter that takes structs only from JSON objects.
//!
//! Serde's derived structs also accept a sequence, field by field in
//! declaration order, so `["* * * * * *", true]` would pass for
//! `{"schedule": …, "enabled": …}`. That is no form a client should be
//! able to rely on (it breaks silently when a field is added), so every
//! request is read through [`Strict`], which asks for a map wherever a
//! struct is expected, at any depth: an array there is "invalid type".
//!
//! It also reads a whole number written with a fraction (`10.0`) where an
//! integer is expected: JSON, and JSON Schema's `integer`, do not tell the
//! two apart, so the API document cannot promise a client more.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// Wraps a deserializer (and, through it, everything nested).
pub struct Strict<D>(pub D);

/// Forwards `deserialize_*` methods with the visitor wrapped.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method($($arg,)* Strict(visitor))
            }
        )*
    };
}

/// Integer `deserialize_*` methods: the visitor also takes a whole number
/// written with a fraction.
macro_rules! integers {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method(Whole(Strict(visitor)))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward! {
        deserialize_any(), deserialize_bool(), deserialize_i128(), deserialize_u128(),
        deserialize_f32(), deserialize_f64(), deserialize_char(), deserialize_str(),
        deserialize_string(), deserialize_bytes(), deserialize_byte_buf(),
        deserialize_option(), deserialize_unit(), deserialize_seq(), deserialize_map(),
        deserialize_identifier(), deserialize_ignored_any(),
        deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str),
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
    }

    integers! {
        deserialize_i8, deserialize_i16, deserialize_i32, deserialize_i64,
        deserialize_u8, deserialize_u16, deserialize_u32, deserialize_u64,
    }

    /// The point of the adapter: a struct is read as a map only.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(Strict(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// Forwards `visit_*` methods of scalars unchanged.
macro_rules! visit {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(
            fn $method<E: de::Error>(self, value: $ty) -> Result<V::Value, E> {
                self.0.$method(value)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Strict<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(f)
    }

    visit! {
        visit_bool(bool), visit_i8(i8), visit_i16(i16), visit_i32(i32), visit_i64(i64),
        visit_i128(i128), visit_u8(u8), visit_u16(u16), visit_u32(u32), visit_u64(u64),
        visit_u128(u128), visit_f32(f32), visit_f64(f64), visit_char(char),
        visit_str(&str), visit_borrowed_str(&'de str), visit_string(String),
        visit_bytes(&[u8]), visit_borrowed_bytes(&'de [u8]), visit_byte_buf(Vec<u8>),
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Strict(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Strict(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Strict(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Strict(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Strict(data))
    }
}

/// A visitor of an integer that reads `10.0` as `10`; any other fraction,
/// or a number past the 64-bit range, is left to the inner visitor to
/// refuse.
struct Whole<V>(V);

/// 2^63 and 2^64 as doubles: the ends of the ranges `i64` and `u64` hold.
const I64_END: f64 = 9_223_372_036_854_775_808.0;
const U64_END: f64 = 18_446_744_073_709_551_616.0;

impl<'de, V: Visitor<'de>> Visitor<'de> for Whole<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(f)
    }

    visit! {
        visit_bool(bool), visit_i8(i8), visit_i16(i16), visit_i32(i32), visit_i64(i64),
        visit_i128(i128), visit_u8(u8), visit_u16(u16), visit_u32(u32), visit_u64(u64),
        visit_u128(u128), visit_f32(f32), visit_char(char),
        visit_str(&str), visit_borrowed_str(&'de str), visit_string(String),
        visit_bytes(&[u8]), visit_borrowed_bytes(&'de [u8]), visit_byte_buf(Vec<u8>),
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<V::Value, E> {
        if value.fract() == 0.0 && (0.0..U64_END).contains(&value) {
            self.0.visit_u64(value as u64)
        } else if value.fract() == 0.0 && (-I64_END..0.0).contains(&value) {
            self.0.visit_i64(value as i64)
        } else {
            self.0.visit_f64(value)
        }
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(d)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(map)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(data)
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Strict<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Strict(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Strict(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Strict(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Strict(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Strict<A> {
    type Error = A::Error;
    type Variant = Strict<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        self.0
            .variant_seed(Strict(seed))
            .map(|(value, variant)| (value, Strict(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Strict(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Strict(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        // A struct variant's body is read as a map too.
        self.0.newtype_variant_seed(MapOnly(Strict(visitor)))
    }
}

/// Reads a struct variant's body as a map.
struct MapOnly<V>(V);

impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for MapOnly<V> {
    type Value = V::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        d.deserialize_map(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        a: u32,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        inner: Inner,
        list: Vec<Inner>,
        maybe: Option<Inner>,
    }

    fn strict<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, String> {
        let mut de = serde_json::Deserializer::from_str(json);
        T::deserialize(Strict(&mut de)).map_err(|e| e.to_string())
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Counts {
        small: u8,
        signed: i64,
        maybe: Option<u32>,
    }

    #[test]
    fn whole_numbers_with_a_fraction_are_integers_and_no_others() {
        let read: Counts = strict(r#"{"small": 10.0, "signed": -3.0, "maybe": 7.0}"#).unwrap();
        assert_eq!(
            read,
            Counts {
                small: 10,
                signed: -3,
                maybe: Some(7)
            }
        );
        for json in [
            r#"{"small": 1.5, "signed": 0, "maybe": null}"#,
            r#"{"small": 256.0, "signed": 0, "maybe": null}"#,
            r#"{"small": -1.0, "signed": 0, "maybe": null}"#,
            r#"{"small": 1, "signed": 1e19, "maybe": null}"#,
        ] {
            assert!(strict::<Counts>(json).is_err(), "{json}");
        }
    }

    #[test]
    fn objects_pass_and_arrays_for_structs_fail_at_any_depth() {
        let ok: Outer =
            strict(r#"{"inner": {"a": 1}, "list": [{"a": 2}], "maybe": {"a": 3}}"#).unwrap();
        assert_eq!(ok.list, vec![Inner { a: 2 }]);
        assert_eq!(ok.maybe, Some(Inner { a: 3 }));
        for json in [
            r#"[{"a": 1}, [], null]"#,
            r#"{"inner": [1], "list": [], "maybe": null}"#,
            r#"{"inner": {"a": 1}, "list": [[2]], "maybe": null}"#,
            r#"{"inner": {"a": 1}, "list": [], "maybe": [3]}"#,
        ] {
            let err = strict::<Outer>(json).unwrap_err();
            assert!(err.contains("invalid type: sequence"), "{json}: {err}");
        }
        // Without the adapter serde takes them.
        assert!(
            serde_json::from_str::<Outer>(r#"{"inner": [1], "list": [], "maybe": null}"#).is_ok()
        );
    }
}
