//! The plot of a run's memory over time, drawn into a palette image without a display (for
//! `--report`): the card's capacity, what the whole card held, what the run held, and the moment
//! the failure line passed, with tick labels in a tiny built-in bitmap font.

use super::evidence::clock;
use super::timeline::{GpuTrack, Timeline, TrackPoint};
use crate::png::Indexed;
use crate::units::GIB;

pub const WIDTH: u32 = 800;
pub const HEIGHT: u32 = 360;

/// Palette entry 0, which a new image is filled with, is the background.
const GRID: u8 = 1;
const AXIS: u8 = 2;
/// What the run held.
pub const RUN: u8 = 3;
/// The whole card.
pub const CARD: u8 = 4;
/// The capacity and the failure.
pub const ALERT: u8 = 5;
/// The run on the other GPUs.
const OTHER_GPU: u8 = 6;

fn palette() -> Vec<[u8; 3]> {
    vec![
        [255, 255, 255],
        [228, 228, 228],
        [90, 90, 90],
        [31, 119, 180],
        [170, 170, 170],
        [214, 39, 40],
        [255, 127, 14],
    ]
}

const LEFT: i64 = 64;
const RIGHT: i64 = WIDTH as i64 - 12;
const TOP: i64 = 12;
const BOTTOM: i64 = HEIGHT as i64 - 28;

/// 3 × 5 glyphs, one row per 3 bits, top row first.
fn glyph(c: char) -> Option<[u8; 5]> {
    Some(match c {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        '.' => [0, 0, 0, 0, 2],
        ':' => [0, 2, 0, 2, 0],
        '+' => [0, 2, 7, 2, 0],
        'G' => [7, 4, 5, 5, 7],
        'i' => [2, 0, 2, 2, 2],
        'B' => [6, 5, 6, 5, 6],
        ' ' => [0, 0, 0, 0, 0],
        _ => return None,
    })
}

/// Draws `text` with its top-left corner at (x, y), each font pixel 2 × 2.
fn text(img: &mut Indexed, x: i64, y: i64, s: &str, colour: u8) {
    for (i, c) in s.chars().enumerate() {
        let Some(g) = glyph(c) else { continue };
        for (row, bits) in g.iter().enumerate() {
            for col in 0..3 {
                if bits & (4 >> col) != 0 {
                    for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                        img.set(
                            x + i as i64 * 8 + col * 2 + dx,
                            y + row as i64 * 2 + dy,
                            colour,
                        );
                    }
                }
            }
        }
    }
}

fn line(img: &mut Indexed, (x0, y0): (i64, i64), (x1, y1): (i64, i64), colour: u8, thick: bool) {
    // Bresenham (integer steps along the longer axis).
    let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
    let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
    let (mut x, mut y, mut err) = (x0, y0, dx + dy);
    loop {
        img.set(x, y, colour);
        if thick {
            img.set(x, y + 1, colour);
            img.set(x + 1, y, colour);
        }
        if x == x1 && y == y1 {
            break;
        }
        let e2 = 2 * err;
        if e2 >= dy {
            err += dy;
            x += sx;
        }
        if e2 <= dx {
            err += dx;
            y += sy;
        }
    }
}

/// A round step for about `n` ticks over `range`.
fn nice_step(range: f64, n: f64) -> f64 {
    let raw = (range / n).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The plot of `tl`; `failure_ms` marks the failure line (ms since the start).
pub fn render(tl: &Timeline, failure_ms: Option<u64>) -> Indexed {
    let mut img = Indexed::new(WIDTH, HEIGHT, palette());
    let main = tl.main_gpu();
    let t_max = tl
        .gpus
        .iter()
        .filter_map(|g| g.points.last().map(|p| p.t_ms))
        .max()
        .unwrap_or(0)
        .max(1000);
    let y_max = main
        .and_then(|g| g.total)
        .into_iter()
        .chain(
            tl.gpus
                .iter()
                .flat_map(|g| g.points.iter().map(|p| p.card.max(p.run))),
        )
        .max()
        .unwrap_or(GIB as u64)
        .max(1) as f64
        * 1.05;
    let x = |t: u64| LEFT + ((t as f64 / t_max as f64) * (RIGHT - LEFT) as f64) as i64;
    let y = |b: u64| BOTTOM - ((b as f64 / y_max) * (BOTTOM - TOP) as f64) as i64;
    // Grid and labels.
    let gib_step = nice_step(y_max / GIB, 6.0);
    let mut v = 0.0;
    while v * GIB <= y_max {
        let yy = y((v * GIB) as u64);
        line(&mut img, (LEFT, yy), (RIGHT, yy), GRID, false);
        let label = if gib_step < 1.0 {
            format!("{v:.1}GiB")
        } else {
            format!("{v:.0}GiB")
        };
        text(&mut img, 4, yy - 5, &label, AXIS);
        v += gib_step;
    }
    let t_step = nice_step(t_max as f64 / 1000.0, 8.0).max(1.0) as u64 * 1000;
    let mut t = 0;
    while t <= t_max {
        let xx = x(t);
        line(&mut img, (xx, TOP), (xx, BOTTOM), GRID, false);
        text(&mut img, xx - 12, BOTTOM + 8, &clock(t), AXIS);
        t += t_step;
    }
    line(&mut img, (LEFT, BOTTOM), (RIGHT, BOTTOM), AXIS, false);
    line(&mut img, (LEFT, TOP), (LEFT, BOTTOM), AXIS, false);
    let draw = |img: &mut Indexed, g: &GpuTrack, value: fn(&TrackPoint) -> u64, colour| {
        for w in g.points.windows(2) {
            line(
                img,
                (x(w[0].t_ms), y(value(&w[0]))),
                (x(w[1].t_ms), y(value(&w[1]))),
                colour,
                true,
            );
        }
    };
    if let Some(g) = main {
        if let Some(total) = g.total {
            // Dashed capacity line.
            let yy = y(total);
            let mut xx = LEFT;
            while xx < RIGHT {
                line(&mut img, (xx, yy), ((xx + 8).min(RIGHT), yy), ALERT, false);
                xx += 14;
            }
        }
        draw(&mut img, g, |p| p.card, CARD);
    }
    for g in tl
        .gpus
        .iter()
        .filter(|g| main.is_none_or(|m| m.key != g.key))
    {
        if g.run_seen_samples > 0 {
            draw(&mut img, g, |p| p.run, OTHER_GPU);
        }
    }
    if let Some(g) = main {
        draw(&mut img, g, |p| p.run, RUN);
    }
    if let Some(f) = failure_ms {
        let xx = x(f.min(t_max));
        line(&mut img, (xx, TOP), (xx, BOTTOM), ALERT, true);
    }
    img
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(nice_step(24.0, 6.0), 5.0);
        assert_eq!(nice_step(0.9, 6.0), 0.2);
        assert_eq!(nice_step(3600.0, 8.0), 500.0);
        assert!(glyph('G').is_some() && glyph('x').is_none());
    }
}
