//! A released decision tree as a diagram (`tree.svg` and `tree.png` beside `tree.json`):
//! each split names its attribute and its noisy row count, each leaf its class and its
//! noisy class counts, each branch the attribute's value or bin. Drawn from `tree.json`
//! alone, so it holds the release and nothing else.

use crate::plot::check_fonts;
use kinsey_core::{Error, Result};
use kinsey_data::output::Outputs;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A node placed on the grid: x in leaf slots, y in levels.
struct Placed<'a> {
    node: &'a Value,
    x: f64,
    depth: usize,
    children: Vec<Placed<'a>>,
}

/// Leaves take the next slot from left to right; a split sits above its children's middle.
fn place<'a>(node: &'a Value, depth: usize, next: &mut usize) -> Placed<'a> {
    let kids: Vec<Placed<'a>> = node["children"]
        .as_array()
        .map(|c| c.iter().map(|n| place(n, depth + 1, next)).collect())
        .unwrap_or_default();
    let x = if kids.is_empty() {
        *next += 1;
        (*next - 1) as f64
    } else {
        kids.iter().map(|k| k.x).sum::<f64>() / kids.len() as f64
    };
    Placed {
        node,
        x,
        depth,
        children: kids,
    }
}

fn depth_of(p: &Placed<'_>) -> usize {
    p.children.iter().map(depth_of).max().unwrap_or(p.depth)
}

/// The lines of a node's box.
fn lines(node: &Value, classes: &[Value]) -> Vec<String> {
    let num = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    if node["kind"] == "leaf" {
        let class = node["class"].as_u64().and_then(|c| classes.get(c as usize));
        let counts: Vec<String> = node["counts"]
            .as_array()
            .map(|c| {
                c.iter()
                    .zip(classes)
                    .map(|(n, k)| format!("{}: {:.0}", num(k), num(n)))
                    .collect()
            })
            .unwrap_or_default();
        vec![
            format!("class {}", class.map(num).unwrap_or(f64::NAN)),
            counts.join(", "),
        ]
    } else {
        vec![
            node["name"].as_str().unwrap_or("?").to_string(),
            format!("~{:.0} rows", num(&node["count"])),
        ]
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    tree: &Value,
    title: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let perr = |e: &dyn std::fmt::Display| Error::Numerical(format!("plotting failed: {e}"));
    root.fill(&WHITE).map_err(|e| perr(&e))?;
    let mut next = 0;
    let placed = place(&tree["root"], 0, &mut next);
    let (w, h) = root.dim_in_pixel();
    let (w, h) = (f64::from(w), f64::from(h));
    let levels = depth_of(&placed) + 1;
    let slot = w / next.max(1) as f64;
    let level = (h - 60.0) / levels as f64;
    let at = |p: &Placed<'_>| {
        (
            (slot * (p.x + 0.5)) as i32,
            (40.0 + level * (p.depth as f64 + 0.5)) as i32,
        )
    };
    let font = |size: f64, c: RGBColor| {
        ("sans-serif", size)
            .into_font()
            .color(&c)
            .pos(Pos::new(HPos::Center, VPos::Center))
    };
    root.draw(&Text::new(
        title.to_string(),
        ((w / 2.0) as i32, 16),
        font(15.0, BLACK),
    ))
    .map_err(|e| perr(&e))?;
    let classes = tree["classes"].as_array().cloned().unwrap_or_default();
    let attributes = tree["attributes"].as_array().cloned().unwrap_or_default();
    let mut stack = vec![&placed];
    while let Some(p) = stack.pop() {
        let (x, y) = at(p);
        let bins = p.node["attribute"]
            .as_u64()
            .and_then(|a| attributes.get(a as usize))
            .is_some_and(|a| !a["bins"].is_null());
        for (v, c) in p.children.iter().enumerate() {
            let (cx, cy) = at(c);
            root.draw(&PathElement::new(
                vec![(x, y), (cx, cy)],
                RGBColor(150, 150, 150),
            ))
            .map_err(|e| perr(&e))?;
            let label = if bins {
                format!("bin {v}")
            } else {
                v.to_string()
            };
            root.draw(&Text::new(
                label,
                ((x + cx) / 2, (y + cy) / 2),
                font(11.0, BLACK),
            ))
            .map_err(|e| perr(&e))?;
            stack.push(c);
        }
    }
    // Boxes over the edges.
    let mut stack = vec![&placed];
    while let Some(p) = stack.pop() {
        let (x, y) = at(p);
        let text = lines(p.node, &classes);
        let half = (text.iter().map(|l| l.len()).max().unwrap_or(4) as i32 * 7) / 2 + 6;
        let fill = if p.children.is_empty() {
            RGBColor(232, 240, 224)
        } else {
            RGBColor(221, 230, 243)
        };
        root.draw(&Rectangle::new(
            [(x - half, y - 18), (x + half, y + 18)],
            fill.filled(),
        ))
        .map_err(|e| perr(&e))?;
        root.draw(&Rectangle::new(
            [(x - half, y - 18), (x + half, y + 18)],
            BLACK,
        ))
        .map_err(|e| perr(&e))?;
        for (i, l) in text.iter().enumerate() {
            let dy = if i == 0 { -8 } else { 8 };
            root.draw(&Text::new(l.clone(), (x, y + dy), font(12.0, BLACK)))
                .map_err(|e| perr(&e))?;
        }
        stack.extend(p.children.iter());
    }
    root.present().map_err(|e| perr(&e))?;
    Ok(())
}

/// Write `<stem>.svg` and `<stem>.png` of the released tree `tree` (`tree.json`).
pub(crate) fn write_tree_chart(
    outputs: &mut Outputs,
    stem: &Path,
    tree: &Value,
    title: &str,
) -> Result<Vec<PathBuf>> {
    check_fonts()?;
    let mut next = 0;
    let leaves = {
        place(&tree["root"], 0, &mut next);
        next.max(1)
    };
    // Room for each leaf's box, within what a viewer shows.
    let size = ((leaves as u32 * 170).clamp(700, 4000), 560);
    let with = |ext: &str| PathBuf::from(format!("{}.{ext}", stem.display()));
    let mut svg = String::new();
    draw(
        SVGBackend::with_string(&mut svg, size).into_drawing_area(),
        tree,
        title,
    )?;
    outputs.write(&with("svg"), svg.as_bytes())?;
    let png = with("png");
    let tmp = outputs.stage(&png)?;
    draw(
        BitMapBackend::new(&tmp, size).into_drawing_area(),
        tree,
        title,
    )?;
    Ok(vec![with("svg"), png])
}
