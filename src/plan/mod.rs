//! Planning: strategies that change a workload, their cost, and the search for the cheapest
//! plan that fits.

pub mod diffusion;
pub mod game;
