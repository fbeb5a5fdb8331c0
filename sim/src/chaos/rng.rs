//! A seeded xorshift64* source shared behind a mutex: reproducible fault and delay draws for a
//! given `Options::seed` without a rand dependency (pure).
use std::sync::Mutex;
use std::time::Duration;

pub struct Rng(Mutex<u64>);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // xorshift never leaves 0; any odd state works.
        Self(Mutex::new(seed | 1))
    }
    /// Uniform in [0, 1).
    pub fn unit(&self) -> f64 {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [min, max] (min when max <= min).
    pub fn between(&self, min: Duration, max: Duration) -> Duration {
        if max <= min {
            return min;
        }
        min + (max - min).mul_f64(self.unit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_reproducible_and_in_range() {
        let (a, b) = (Rng::new(9), Rng::new(9));
        let xs: Vec<f64> = (0..50).map(|_| a.unit()).collect();
        let ys: Vec<f64> = (0..50).map(|_| b.unit()).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        let (lo, hi) = (Duration::from_millis(10), Duration::from_millis(20));
        for _ in 0..100 {
            let d = a.between(lo, hi);
            assert!(lo <= d && d <= hi, "{d:?}");
        }
        assert_eq!(a.between(hi, lo), hi);
    }
}
