#include "apps/word2vec/vectors_io.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "messages/error.hpp"

namespace darcy::word2vec {

caf::error word_not_in_model(const std::string& word) {
  return make_error(errc::not_found, "'" + word + "' is not in the model");
}

caf::expected<Eigen::Index> find_word(const word_vectors& v, const std::string& word) {
  auto at = std::find(v.words.begin(), v.words.end(), word);
  if (at == v.words.end())
    return word_not_in_model(word);
  return static_cast<Eigen::Index>(at - v.words.begin());
}

caf::error write_vectors(const word_vectors& v, const std::string& path, vectors_format format) {
  std::ofstream out{path, std::ios::binary};
  if (!out)
    return make_error(errc::io_error, "cannot write " + path);
  auto dim = v.vectors.cols();
  out << v.words.size() << ' ' << dim << '\n';
  for (size_t i = 0; i < v.words.size(); ++i) {
    auto row = v.vectors.row(static_cast<Eigen::Index>(i));
    out << v.words[i] << ' ';
    if (format == vectors_format::binary) {
      out.write(reinterpret_cast<const char*>(row.data()),
                static_cast<std::streamsize>(dim * sizeof(float)));
    } else {
      for (Eigen::Index d = 0; d < dim; ++d)
        out << row(d) << (d + 1 == dim ? "" : " ");
    }
    out << '\n';
  }
  out.close();
  return out ? caf::error{} : make_error(errc::io_error, "cannot write " + path);
}

caf::expected<word_vectors> read_vectors(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return make_error(errc::not_found, "vectors file " + path + " does not exist");
  auto corrupt = [&](const std::string& what) {
    return make_error(errc::corrupt_file, path + ": " + what);
  };
  std::string header;
  if (!std::getline(in, header))
    return corrupt("empty file");
  std::istringstream hs{header};
  long long count = -1, dim = -1;
  if (!(hs >> count >> dim) || count < 0 || dim <= 0 || dim > (1 << 20))
    return corrupt("the first line must be '<count> <dim>'");
  // Check what the header promises against the file before allocating it: an entry takes at
  // least a one-letter word and dim one-digit numbers with their separators.
  auto body_start = in.tellg();
  in.seekg(0, std::ios::end);
  auto body_bytes = static_cast<long long>(in.tellg() - body_start);
  in.seekg(body_start);
  if (count > 0 && count > body_bytes / (2 * dim + 2))
    return corrupt("the header promises " + std::to_string(count) + " vectors of dim " +
                   std::to_string(dim) + ", but the file holds only " + std::to_string(body_bytes) +
                   " bytes after it");
  word_vectors result;
  result.vectors.resize(static_cast<Eigen::Index>(count), static_cast<Eigen::Index>(dim));
  // The binary format follows each word with raw floats; the text format with digits. Tell
  // them apart by whether the first entry's values parse as exactly `dim` numbers on a line.
  auto body = in.tellg();
  bool binary = false;
  {
    std::string line;
    if (count > 0 && std::getline(in, line)) {
      std::istringstream ls{line};
      std::string word;
      ls >> word;
      float x;
      long long n = 0;
      while (ls >> x)
        ++n;
      binary = !(n == dim && ls.eof());
    }
    in.clear();
    in.seekg(body);
  }
  result.words.reserve(static_cast<size_t>(count));
  for (long long i = 0; i < count; ++i) {
    std::string word;
    if (!(in >> word))
      return corrupt("truncated at entry " + std::to_string(i + 1) + " of " +
                     std::to_string(count));
    auto row = result.vectors.row(static_cast<Eigen::Index>(i));
    if (binary) {
      in.get(); // the space after the word
      in.read(reinterpret_cast<char*>(row.data()), static_cast<std::streamsize>(dim * 4));
      if (in.gcount() != dim * 4)
        return corrupt("truncated in the vector of entry " + std::to_string(i + 1));
    } else {
      for (long long d = 0; d < dim; ++d)
        if (!(in >> row(d)))
          return corrupt("entry " + std::to_string(i + 1) + " ('" + word + "') has fewer than " +
                         std::to_string(dim) + " numbers");
    }
    result.words.push_back(std::move(word));
  }
  return result;
}

} // namespace darcy::word2vec
