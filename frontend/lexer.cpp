#include "frontend/lexer.h"

#include <fmt/format.h>

#include <cctype>

#include "ir/error.h"

namespace loom::text {

namespace {

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    Loc end;  // just past the last token, so `found end of input` points where text stops
    for (;;) {
      skipBlanksAndComments();
      if (i_ >= s_.size()) break;
      out.push_back(next());
      end = loc();
    }
    out.push_back({TokKind::End, "", end});
    return out;
  }

 private:
  Loc loc() const { return {line_, static_cast<int>(i_ - line_start_) + 1}; }
  char peek(size_t k = 0) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }

  void advance() {
    if (s_[i_++] == '\n') {
      ++line_;
      line_start_ = i_;
    }
  }

  void skipBlanksAndComments() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') advance();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        advance();
      } else {
        return;
      }
    }
  }

  Token next() {
    Loc at = loc();
    char c = peek();
    if (isIdentStart(c)) return {TokKind::Ident, take(isIdentChar), at};
    if (isDigit(c)) return {TokKind::Number, number(), at};
    if (c == '"') return string(at);
    advance();
    if (std::string_view(":,=[](){}*/-").find(c) != std::string_view::npos)
      return {TokKind::Punct, std::string(1, c), at};
    // A character outside ASCII: its whole UTF-8 sequence, so that messages quote it whole.
    std::string bad(1, c);
    if (static_cast<unsigned char>(c) >= 0xC0)
      while (bad.size() < 4 && (static_cast<unsigned char>(peek()) & 0xC0) == 0x80) {
        bad += peek();
        advance();
      }
    return {TokKind::Invalid, bad, at};
  }

  template <typename Pred>
  std::string take(Pred pred) {
    size_t b = i_;
    while (i_ < s_.size() && pred(s_[i_])) advance();
    return std::string(s_.substr(b, i_ - b));
  }

  // digits [. digits] [e[+-]digits], then whatever identifier characters are glued on.
  std::string number() {
    size_t b = i_;
    take(isDigit);
    if (peek() == '.') {
      advance();
      take(isDigit);
    }
    bool signed_exp = (peek(1) == '+' || peek(1) == '-') && isDigit(peek(2));
    if ((peek() == 'e' || peek() == 'E') && (isDigit(peek(1)) || signed_exp)) {
      advance();
      if (signed_exp) advance();
      take(isDigit);
    }
    take(isIdentChar);
    return std::string(s_.substr(b, i_ - b));
  }

  Token string(Loc at) {
    advance();  // opening quote
    std::string text;
    while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\n') {
      char c = s_[i_];
      advance();
      if (c == '\\' && i_ < s_.size() && s_[i_] != '\n') {
        char e = s_[i_];
        advance();
        text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        text += c;
      }
    }
    if (peek() != '"') return {TokKind::Invalid, "\"" + text, at};
    advance();
    return {TokKind::String, text, at};
  }

  std::string_view s_;
  size_t i_ = 0, line_start_ = 0;
  int line_ = 1;
};

}  // namespace

namespace {
size_t printableAt(std::string_view line, size_t i);

// `text` with every byte a terminal would interpret escaped as \xNN.
std::string shownBytes(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = printableAt(text, i);
    if (n == 0) {
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}
}  // namespace

std::string Token::describe() const {
  switch (kind) {
    case TokKind::End: return "end of input";
    case TokKind::String: return fmt::format("string \"{}\"", shownBytes(text));
    case TokKind::Invalid: {
      if (text[0] == '"') return "an unterminated string";
      const auto lead = static_cast<unsigned char>(text[0]);
      // The bytes a UTF-8 sequence with this lead byte has: 2 to 4 (0 for none).
      const size_t want = lead >= 0xF0 && lead < 0xF8 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
      if (lead >= 0x80 && want == text.size() && printableAt(text, 0) == want)
        return fmt::format("`{}` (outside ASCII)", text);
      if (lead == 0xC2 && want == text.size())  // U+0080..U+009F: C1 controls
        return fmt::format("control character U+{:04X}", static_cast<unsigned char>(text[1]));
      if (lead >= 0x80 || lead < 0x20 || lead == 0x7F)
        return fmt::format("byte 0x{:02X}{}", lead, lead >= 0x80 ? " (not valid UTF-8)" : "");
      return fmt::format("`{}`", text);
    }
    default: return fmt::format("`{}`", text);
  }
}

std::vector<Token> tokenize(std::string_view text) { return Lexer(text).run(); }

std::string_view Source::lineText(int line) const {
  std::string_view s = text_;
  for (int l = 1; l < line; ++l) {
    size_t nl = s.find('\n');
    if (nl == std::string_view::npos) return {};
    s.remove_prefix(nl + 1);
  }
  size_t end = s.find('\n');
  s = s.substr(0, end);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

namespace {

// Bytes [i, i + n) of `line` that are one UTF-8 character a terminal prints as it is: n, or 0
// where line[i] starts no such character (a control byte, a C1 control, invalid UTF-8).
size_t printableAt(std::string_view line, size_t i) {
  const auto b = static_cast<unsigned char>(line[i]);
  if (b == '\t' || (b >= 0x20 && b < 0x7F)) return 1;
  const size_t n = b >= 0xF0 && b < 0xF5 ? 4 : b >= 0xE0 && b < 0xF0 ? 3 : b >= 0xC2 && b < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > line.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(line[i + k]) & 0xC0) != 0x80) return 0;
  if (b == 0xC2 && static_cast<unsigned char>(line[i + 1]) < 0xA0) return 0;  // C1 controls
  return n;
}

}  // namespace

std::string Source::diagnostic(Loc at, const std::string& message) const {
  std::string_view line = lineText(at.line);
  // The line as a terminal shows it safely: bytes a terminal would interpret (controls, escape
  // sequences, invalid UTF-8) escaped as \xNN. The caret's indentation follows what is shown,
  // keeping tabs, so it lines up under the column.
  std::string pad;
  for (size_t i = 0; i < line.size();) {
    const size_t n = printableAt(line, i);
    if (static_cast<int>(i) + 1 < at.col) pad += n == 0 ? "    " : line[i] == '\t' ? "\t" : " ";
    i += n == 0 ? 1 : n;
  }
  const std::string shown = shownBytes(line);
  for (int i = static_cast<int>(line.size()); i + 1 < at.col; ++i) pad += ' ';
  return fmt::format("{}:{}:{}: error: {}\n{}\n{}^", name_, at.line, at.col, message, shown, pad);
}

void Source::error(Loc at, const std::string& message) const {
  throw Error(diagnostic(at, message));
}

}  // namespace loom::text
