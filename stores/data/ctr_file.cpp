#include "stores/data/ctr_file.hpp"

#include <charconv>
#include <cstdio>

#include <zlib.h>

#include "messages/error.hpp"

namespace darcy::stores {

namespace {

gzFile gz(void* f) {
  return static_cast<gzFile>(f);
}

bool is_hex8(std::string_view s) {
  if (s.size() != 8)
    return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
      return false;
  return true;
}

/// `s` in quotes, cut to its first 24 bytes: an error line never carries a whole field.
std::string quote(std::string_view s) {
  return "'" + std::string{s.substr(0, 24)} + (s.size() > 24 ? "...'" : "'");
}

} // namespace

std::string parse_ctr_line(std::string_view line, ctr_row& row) {
  constexpr size_t fields = 1 + compute::ctr_int_fields + compute::ctr_cat_fields;
  std::array<std::string_view, fields> f;
  size_t n = 0, start = 0;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i < line.size() && line[i] != '\t')
      continue;
    if (n < fields)
      f[n] = line.substr(start, i - start);
    ++n;
    start = i + 1;
  }
  if (n != fields)
    return std::to_string(n) + " tab-separated fields, not " + std::to_string(fields);
  if (f[0] != "0" && f[0] != "1")
    return "the label is " + quote(f[0]) + ", not 0 or 1";
  row.label = f[0] == "1";
  for (size_t j = 0; j < compute::ctr_int_fields; ++j) {
    auto s = f[1 + j];
    row.int_present[j] = !s.empty();
    row.ints[j] = 0;
    if (s.empty())
      continue;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), row.ints[j]);
    if (ec != std::errc{} || end != s.data() + s.size())
      return "integer field " + std::to_string(j + 1) + " is " + quote(s) + ", not an integer";
  }
  for (size_t c = 0; c < compute::ctr_cat_fields; ++c) {
    auto s = f[1 + compute::ctr_int_fields + c];
    if (!s.empty() && !is_hex8(s))
      return "categorical field " + std::to_string(c + 1) + " is " + quote(s) +
             ", not 8 hex digits";
    row.cats[c] = s;
  }
  return {};
}

caf::expected<std::unique_ptr<ctr_reader>> ctr_reader::open(const std::string& path,
                                                            bool skip_malformed) {
  auto f = gzopen(path.c_str(), "rb");
  if (!f)
    return make_error(errc::io_error, "cannot open " + path);
  gzbuffer(f, 1 << 18);
  return std::unique_ptr<ctr_reader>{new ctr_reader(path, f, skip_malformed)};
}

ctr_reader::ctr_reader(std::string path, void* file, bool skip_malformed)
  : path_(std::move(path)), file_(file), skip_malformed_(skip_malformed) {
}

ctr_reader::~ctr_reader() {
  gzclose(gz(file_));
}

caf::expected<bool> ctr_reader::read_line() {
  line_buffer_.clear();
  too_long_ = false;
  char chunk[4096];
  bool any = false;
  while (gzgets(gz(file_), chunk, sizeof chunk)) {
    any = true;
    std::string_view part{chunk};
    bool ended = !part.empty() && part.back() == '\n';
    if (ended)
      part.remove_suffix(1);
    if (line_buffer_.size() + part.size() <= ctr_max_line)
      line_buffer_.append(part);
    else
      too_long_ = true;
    if (ended)
      break;
  }
  int code = Z_OK;
  const char* message = gzerror(gz(file_), &code);
  if (code != Z_OK && code != Z_STREAM_END)
    return make_error(errc::corrupt_file,
                      path_ + ":" + std::to_string(line_ + 1) + ": " +
                        (code == Z_BUF_ERROR ? "the file is cut short" : std::string{message}));
  if (!any)
    return false;
  if (!line_buffer_.empty() && line_buffer_.back() == '\r')
    line_buffer_.pop_back();
  ++line_;
  return true;
}

caf::expected<bool> ctr_reader::next(ctr_row& row) {
  for (;;) {
    auto got = read_line();
    if (!got || !*got)
      return got;
    auto why = too_long_ ? "longer than " + std::to_string(ctr_max_line) + " bytes"
                         : parse_ctr_line(line_buffer_, row);
    if (why.empty())
      return true;
    if (!skip_malformed_)
      return make_error(errc::corrupt_file, path_ + ":" + std::to_string(line_) + ": " + why);
    ++skipped_;
  }
}

caf::expected<std::unique_ptr<ctr_writer>> ctr_writer::open(const std::string& path) {
  bool gzip = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  auto f = gzopen(path.c_str(), gzip ? "wb6" : "wbT");
  if (!f)
    return make_error(errc::io_error, "cannot write " + path);
  gzbuffer(f, 1 << 18);
  return std::unique_ptr<ctr_writer>{new ctr_writer(path, f)};
}

ctr_writer::~ctr_writer() {
  if (file_)
    gzclose(gz(file_));
}

void append_ctr_line(const compute::ctr_synthetic_row& row, std::string& out) {
  out += row.label ? '1' : '0';
  char text[24];
  for (size_t j = 0; j < compute::ctr_int_fields; ++j) {
    out += '\t';
    if (row.int_present[j]) {
      auto [end, ec] = std::to_chars(text, text + sizeof text, row.ints[j]);
      out.append(text, end);
    }
  }
  for (size_t c = 0; c < compute::ctr_cat_fields; ++c) {
    out += '\t';
    if (row.cat_present[c]) {
      // "%08x", without printf's cost on a generator that feeds a trainer.
      static constexpr char digits[] = "0123456789abcdef";
      for (int d = 0; d < 8; ++d)
        text[d] = digits[(row.cats[c] >> (28 - 4 * d)) & 0xf];
      out.append(text, 8);
    }
  }
}

caf::error ctr_writer::write(const compute::ctr_synthetic_row& row) {
  buffer_.clear();
  append_ctr_line(row, buffer_);
  buffer_ += '\n';
  if (gzwrite(gz(file_), buffer_.data(), static_cast<unsigned>(buffer_.size())) !=
      static_cast<int>(buffer_.size()))
    return make_error(errc::io_error, "cannot write " + path_);
  return {};
}

caf::error ctr_writer::close() {
  auto f = gz(file_);
  file_ = nullptr;
  if (gzclose(f) != Z_OK)
    return make_error(errc::io_error, "cannot write " + path_);
  return {};
}

} // namespace darcy::stores
