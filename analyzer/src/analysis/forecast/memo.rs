//! Values computed once per key and shared by the candidates of one forecast: they all
//! forecast from the same origins (prefixes of one series), so what depends only on the
//! prefix (where its regime starts, its decompositions) is found once, not once per
//! candidate. A few keys per forecast: a list is enough.

use std::sync::Mutex;

/// A value per key, computed the first time it is asked for.
pub struct Memo<K, V>(Mutex<Vec<(K, V)>>);

impl<K: PartialEq, V: Clone> Memo<K, V> {
    /// The value for `key`, made by `make` if there is none yet.
    pub fn get_or(&self, key: K, make: impl FnOnce() -> V) -> V {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, v)) = known.iter().find(|(k, _)| *k == key) {
            return v.clone();
        }
        let v = make();
        known.push((key, v.clone()));
        v
    }
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Memo(Mutex::default())
    }
}

impl<K, V> std::fmt::Debug for Memo<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_is_made_once() {
        let memo: Memo<usize, usize> = Memo::default();
        let mut made = 0;
        assert_eq!(
            memo.get_or(3, || {
                made += 1;
                30
            }),
            30
        );
        assert_eq!(
            memo.get_or(3, || {
                made += 1;
                31
            }),
            30
        );
        assert_eq!(
            memo.get_or(4, || {
                made += 1;
                40
            }),
            40
        );
        assert_eq!(made, 2);
    }
}
