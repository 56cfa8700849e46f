// Re-encodes a JPEG at quality 90 as 4:4:4 ("444"), 4:2:2 ("422") or progressive 4:2:0 ("prog"),
// to run `gpufeed-bench decode --folder` on layouts other than the baseline 4:2:0 it generates
// (docs/benchmarks/decode/README.md).
//
// Usage: gpufeed-reencode-jpeg IN OUT 444|422|prog
#include <cstddef>  // jpeglib.h uses size_t and FILE without declaring them
#include <cstdio>

#include <jpeglib.h>

#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4 || (std::strcmp(argv[3], "444") != 0 && std::strcmp(argv[3], "422") != 0 &&
                    std::strcmp(argv[3], "prog") != 0)) {
    std::fputs("usage: gpufeed-reencode-jpeg IN OUT 444|422|prog\n", stderr);
    return 2;
  }
  FILE* in = std::fopen(argv[1], "rb");
  if (in == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  jpeg_decompress_struct d;
  jpeg_error_mgr e1;
  d.err = jpeg_std_error(&e1);
  jpeg_create_decompress(&d);
  jpeg_stdio_src(&d, in);
  jpeg_read_header(&d, TRUE);
  d.out_color_space = JCS_RGB;
  jpeg_start_decompress(&d);
  std::vector<unsigned char> px(d.output_width * d.output_height * 3);
  while (d.output_scanline < d.output_height) {
    JSAMPROW r = px.data() + d.output_scanline * d.output_width * 3;
    jpeg_read_scanlines(&d, &r, 1);
  }
  jpeg_finish_decompress(&d);
  std::fclose(in);
  FILE* out = std::fopen(argv[2], "wb");
  if (out == nullptr) {
    std::perror(argv[2]);
    return 1;
  }
  jpeg_compress_struct c;
  jpeg_error_mgr e2;
  c.err = jpeg_std_error(&e2);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, out);
  c.image_width = d.output_width;
  c.image_height = d.output_height;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  if (!std::strcmp(argv[3], "444")) {
    c.comp_info[0].h_samp_factor = 1;
    c.comp_info[0].v_samp_factor = 1;
  }
  if (!std::strcmp(argv[3], "422")) {
    c.comp_info[0].h_samp_factor = 2;
    c.comp_info[0].v_samp_factor = 1;
  }
  if (!std::strcmp(argv[3], "prog")) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW r = px.data() + c.next_scanline * c.image_width * 3;
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  std::fclose(out);
  jpeg_destroy_compress(&c);
  jpeg_destroy_decompress(&d);
}
