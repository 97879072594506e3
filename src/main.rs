fn main() {
    println!("vram-doctor: under construction");
}
