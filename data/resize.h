// data/resize.h: one pass from decoded 8-bit pixels to a network's input:
// resize, crop, optional horizontal flip and per-channel normalisation,
// written straight into (C, H, W) floats.
//
//   resized image: the source scaled to resized_width x resized_height
//   output[c, y, x] = (R[c, crop_y + y, crop_x + x'] / 255 - mean[c]) / stddev[c],
//                     x' = flip ? crop_width - 1 - x : x
// where R is the source resampled separably (columns, then rows) with a
// triangle filter on pixel centres: bilinear when enlarging; when shrinking by
// a factor s, the triangle is widened to a radius of s source pixels so that
// every source pixel contributes (antialiasing), as PIL's BILINEAR resize
// does (and so torchvision's Resize on PIL images). Weights are clipped at
// the borders and renormalised.
//
// Note [A hand-written resize]: no small library that Debian ships does a
// fused resize-crop-normalise into our float buffer (libswscale and OpenCV
// write 8-bit images and are large dependencies; stb_image_resize has no
// crop or normalise), and the GPU machine has no apt to install one. Only the
// output window is computed: a 224 crop of a 256 resize costs 224^2 outputs.
#pragma once

#include <array>
#include <span>

#include "data/jpeg.h"

namespace glassbox {

struct ResizeCropOptions {
  int resized_width = 0, resized_height = 0;  // the whole source is scaled to this size...
  int crop_x = 0, crop_y = 0;                 // ...and this window of it is the output
  int crop_width = 0, crop_height = 0;
  bool flip = false;                          // mirror the window left-right
  std::array<float, 3> mean{0.0f, 0.0f, 0.0f};  // per channel, on values scaled to [0, 1]
  std::array<float, 3> stddev{1.0f, 1.0f, 1.0f};
};

// `source`: 1 or 3 channels; `out`: source.channels x crop_height x
// crop_width floats. Throws ShapeError if the window is not inside the
// resized image, a size is not positive, or `out` has another size.
void resize_crop_normalise(const Image& source, const ResizeCropOptions& options, std::span<float> out);

// The source resized to width x height, as 8-bit pixels (for glassbox make-folder).
Image resize_image(const Image& source, int width, int height);

}  // namespace glassbox
