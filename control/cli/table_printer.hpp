// Column-aligned text tables for vxfedctl's human output.
#pragma once

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

namespace vxfed::control {

class TablePrinter {
 public:
  explicit TablePrinter(std::vector<std::string> header) : rows_{std::move(header)} {}
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::size_t size() const { return rows_.size() - 1; }

  void print(std::ostream& out) const {
    std::vector<std::size_t> width;
    for (const auto& r : rows_)
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (width.size() <= i) width.push_back(0);
        width[i] = std::max(width[i], r[i].size());
      }
    for (const auto& r : rows_) {
      std::string line;
      for (std::size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
      }
      out << line << "\n";
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace vxfed::control
