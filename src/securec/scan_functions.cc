// sscanf_s and vsscanf_s. The %c, %s and %[ conversions, which take a buffer size after the
// pointer and fail rather than overrun it, are scanned here; numbers are handed to the C
// library's sscanf one conversion at a time (with %n to learn how far it read), so their
// syntax and overflow handling are glibc's.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cwchar>
#include <string_view>

#include "securec/secure_util.h"

namespace vigil::securec {
namespace {

constexpr int kEnd = -1;           // no more input
constexpr int kBadArguments = -2;  // a bad format or a null pointer argument, input left over
constexpr size_t kMaxWidth = 0x7fffffff;

bool IsSpace(int ch) {
  return ch == ' ' || (ch >= '\t' && ch <= '\r');
}
bool IsDigit(int ch) {
  return ch >= '0' && ch <= '9';
}

// One conversion specification: %[*][width][length]conversion.
struct Spec {
  bool suppress = false;
  bool width_set = false;
  size_t width = 0;
  std::string_view length;  // hh, h, l, ll, L, q, j, z or t, as written
  char conversion = 0;      // lower case; '[' for a scan set
  bool wide = false;        // %ls, %lc, %l[, %S, %C store wchar_t
};

// Reads *format (at a '%') up to its conversion character, left at *format. False when the
// specification is cut short or its width is out of range.
bool ParseSpec(const char** format, Spec* spec) {
  const char* f = *format + 1;
  if (*f == '*') {
    spec->suppress = true;
    ++f;
  }
  if (IsDigit(*f)) {
    spec->width_set = true;
    for (; IsDigit(*f); ++f) {
      spec->width = spec->width * 10 + static_cast<size_t>(*f - '0');
      if (spec->width > kMaxWidth) return false;
    }
  }
  const char* length_start = f;
  if ((f[0] == 'h' && f[1] == 'h') || (f[0] == 'l' && f[1] == 'l')) {
    f += 2;
  } else if (*f != '\0' && strchr("hlLqjzt", *f) != nullptr) {
    ++f;
  }
  spec->length = std::string_view(length_start, static_cast<size_t>(f - length_start));
  if (*f == '\0') return false;
  const char c = *f;
  spec->wide = c == 'S' || c == 'C' || (spec->length == "l" && (c == 's' || c == 'c' || c == '['));
  spec->conversion = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  *format = f;
  return true;
}

// The characters a %[ set accepts. *format is at '['; it is left at the closing ']'.
// False when the set is never closed.
bool ParseScanSet(const char** format, bool accept[256]) {
  const unsigned char* f = reinterpret_cast<const unsigned char*>(*format) + 1;
  bool invert = false;
  if (*f == '^') {
    invert = true;
    ++f;
  }
  bool member[256] = {};
  unsigned prev = 0;  // the last single member, start of a possible range
  if (*f == ']') {
    member[']'] = true;
    prev = ']';
    ++f;
  }
  while (*f != '\0' && *f != ']') {
    const unsigned c = *f++;
    if (c != '-' || prev == 0 || *f == ']' || *f == '\0') {
      member[c] = true;
      prev = c;
      continue;
    }
    const unsigned last = *f++;
    if (prev <= last) {
      for (unsigned x = prev; x <= last; ++x) member[x] = true;
    } else {
      // A descending range is no range: '-' and its end are members as written.
      member['-'] = true;
      member[last] = true;
    }
    prev = 0;
  }
  if (*f == '\0') return false;
  for (int i = 0; i < 256; ++i) accept[i] = member[i] != invert;
  *format = reinterpret_cast<const char*>(f);
  return true;
}

void StoreCount(void* p, std::string_view length, size_t value) {
  if (length == "hh") {
    *static_cast<signed char*>(p) = static_cast<signed char>(value);
  } else if (length == "h") {
    *static_cast<short*>(p) = static_cast<short>(value);
  } else if (length == "l") {
    *static_cast<long*>(p) = static_cast<long>(value);
  } else if (length == "ll" || length == "q" || length == "L") {
    *static_cast<long long*>(p) = static_cast<long long>(value);
  } else if (length == "j") {
    *static_cast<intmax_t*>(p) = static_cast<intmax_t>(value);
  } else if (length == "z") {
    *static_cast<size_t*>(p) = value;
  } else if (length == "t") {
    *static_cast<ptrdiff_t*>(p) = static_cast<ptrdiff_t>(value);
  } else {
    *static_cast<int*>(p) = static_cast<int>(value);
  }
}

// The buffer size that follows a %c/%s/%[ pointer. Callers pass sizeof (a size_t) as often as
// an int or unsigned, whose upper half in the 64-bit argument slot is undefined; the limit is
// below 4 GiB, so only the low half is read.
size_t ArraySizeArg(va_list* args) {
  const size_t size = va_arg(*args, size_t);
#ifdef SECUREC_ON_64BITS
  return size & 0xffffffffUL;
#else
  return size;
#endif
}

class Scanner {
 public:
  Scanner(const char* input, size_t length, va_list* args)
      : input_(input), length_(length), args_(args) {}

  // The number of fields assigned; kEnd when the input ended before any conversion was done;
  // kBadArguments on a bad format or null argument found with input left.
  int Run(const char* format);

 private:
  int Get() {
    last_ = pos_ < length_ ? static_cast<unsigned char>(input_[pos_++]) : kEnd;
    return last_;
  }
  void Unget(int ch) {
    if (ch != kEnd) --pos_;
  }
  int GetSkippingSpace() {
    int ch = Get();
    while (ch != kEnd && IsSpace(ch)) ch = Get();
    return ch;
  }

  bool ScanNumber(const Spec& spec);
  bool ScanChars(const Spec& spec, const char** format);
  wchar_t WideFromInput(int first);

  const char* input_;
  size_t length_;
  va_list* args_;
  size_t pos_ = 0;
  int last_ = 0;         // the last character read (kEnd once a read found no more input)
  int assigned_ = 0;     // fields stored
  int conversions_ = 0;  // conversions completed, stored or suppressed
  bool bad_arguments_ = false;
};

int Scanner::Run(const char* format) {
  const char* f = format;
  while (*f != '\0') {
    if (IsSpace(static_cast<unsigned char>(*f))) {
      Unget(GetSkippingSpace());
      while (IsSpace(static_cast<unsigned char>(*f))) ++f;
      continue;
    }
    if (*f != '%') {
      const int ch = Get();
      if (ch != static_cast<unsigned char>(*f)) {
        Unget(ch);
        break;
      }
      ++f;
      continue;
    }
    Spec spec;
    if (!ParseSpec(&f, &spec)) {
      bad_arguments_ = true;
      break;
    }
    if (spec.width_set && spec.width == 0) break;
    const char conv = spec.conversion;
    if (conv != 'n') {
      // %c and %[ take whitespace as input; everything else skips it first.
      const int ch = (conv == 'c' || conv == '[') ? Get() : GetSkippingSpace();
      if (ch == kEnd) break;
      Unget(ch);
    }
    bool ok = true;
    switch (conv) {
      case 'c':
      case 's':
      case '[':
        ok = ScanChars(spec, &f);
        break;
      case 'd':
      case 'i':
      case 'o':
      case 'u':
      case 'x':
      case 'p':
      case 'a':
      case 'e':
      case 'f':
      case 'g':
        ok = ScanNumber(spec);
        break;
      case 'n':
        if (!spec.suppress) {
          void* target = va_arg(*args_, void*);
          if (target == nullptr) {
            bad_arguments_ = true;
            ok = false;
            break;
          }
          StoreCount(target, spec.length, pos_);
        }
        break;
      default: {
        // "%%" and any unknown conversion character match that character in the input.
        const int ch = Get();
        if (ch != static_cast<unsigned char>(*f)) {
          Unget(ch);
          bad_arguments_ = true;
          ok = false;
        }
        ++f;
        continue;
      }
    }
    if (!ok) break;
    ++conversions_;
    ++f;
  }
  if (last_ == kEnd) return (assigned_ != 0 || conversions_ != 0) ? assigned_ : kEnd;
  return bad_arguments_ ? kBadArguments : assigned_;
}

bool Scanner::ScanNumber(const Spec& spec) {
  char format[48];
  const std::string_view star = spec.suppress ? "*" : "";
  const std::string_view length = spec.length;
  if (spec.width_set) {
    snprintf(format, sizeof(format), "%%%.*s%zu%.*s%c%%n", static_cast<int>(star.size()),
             star.data(), spec.width, static_cast<int>(length.size()), length.data(),
             spec.conversion);
  } else {
    snprintf(format, sizeof(format), "%%%.*s%.*s%c%%n", static_cast<int>(star.size()), star.data(),
             static_cast<int>(length.size()), length.data(), spec.conversion);
  }
  int consumed = -1;  // stays -1 unless the conversion succeeded (%n comes after it)
  const char* at = input_ + pos_;
  if (spec.suppress) {
    sscanf(at, format, &consumed);
  } else {
    void* target = va_arg(*args_, void*);
    if (target == nullptr) {
      bad_arguments_ = true;
      return false;
    }
    sscanf(at, format, target, &consumed);
  }
  if (consumed < 0) return false;
  pos_ += static_cast<size_t>(consumed);
  last_ = pos_ < length_ ? static_cast<unsigned char>(input_[pos_]) : kEnd;
  if (!spec.suppress) ++assigned_;
  return true;
}

// The wide character starting with input byte `first` (already read); consumes the rest of a
// multibyte sequence, '?' when it is not one in the current locale.
wchar_t Scanner::WideFromInput(int first) {
  if (first < 0x80) return static_cast<wchar_t>(first);
  mbstate_t state{};
  wchar_t wc = L'?';
  const size_t used = mbrtowc(&wc, input_ + pos_ - 1, length_ - pos_ + 1, &state);
  if (used == static_cast<size_t>(-1) || used == static_cast<size_t>(-2) || used == 0) {
    return L'?';
  }
  pos_ += used - 1;
  return wc;
}

bool Scanner::ScanChars(const Spec& spec, const char** format) {
  const char conv = spec.conversion;
  void* target = nullptr;
  size_t room = 0;  // elements left for characters (the terminator's is kept aside)
  if (!spec.suppress) {
    target = va_arg(*args_, void*);
    if (target == nullptr) {
      bad_arguments_ = true;
      return false;
    }
    const size_t size = ArraySizeArg(args_);
    const size_t limit = spec.wide ? SECUREC_WCHAR_STRING_MAX_LEN : SECUREC_STRING_MAX_LEN;
    if (size == 0 || size > limit) return false;  // dest untouched
    room = conv == 'c' ? size : size - 1;
  }
  auto terminate_at = [&](size_t index) {
    if (target == nullptr) return;
    if (spec.wide) {
      static_cast<wchar_t*>(target)[index] = L'\0';
    } else {
      static_cast<char*>(target)[index] = '\0';
    }
  };
  bool accept[256] = {};
  if (conv == '[' && !ParseScanSet(format, accept)) {
    terminate_at(0);
    return false;
  }
  size_t width = spec.width_set ? spec.width : (conv == 'c' ? 1 : SIZE_MAX);
  size_t stored = 0;
  bool matched = false;
  for (; width > 0; --width) {
    const int ch = Get();
    const bool take =
        ch != kEnd && (conv == 'c' || (conv == 's' && !IsSpace(ch)) || (conv == '[' && accept[ch]));
    if (!take) {
      Unget(ch);
      break;
    }
    matched = true;
    if (spec.suppress) continue;
    if (room == 0) {
      // The input does not fit: an empty result rather than a cut one, and the scan ends.
      terminate_at(0);
      return false;
    }
    if (spec.wide) {
      static_cast<wchar_t*>(target)[stored] = WideFromInput(ch);
    } else {
      static_cast<char*>(target)[stored] = static_cast<char>(ch);
    }
    ++stored;
    --room;
  }
  if (!matched) return false;
  if (spec.suppress) return true;
  if (conv != 'c') terminate_at(stored);
  ++assigned_;
  return true;
}

// Empty or oversized input: the reference library clears the first %c/%s/%[ buffer, so a
// caller that ignores the -1 still finds an empty string there.
void ClearFirstBuffer(const char* format, va_list* args) {
  const char* f = strchr(format, '%');
  Spec spec;
  if (f == nullptr || !ParseSpec(&f, &spec) || spec.suppress) return;
  if (spec.conversion != 's' && spec.conversion != 'c' && spec.conversion != '[') return;
  void* target = va_arg(*args, void*);
  const size_t size = ArraySizeArg(args);
  if (target == nullptr || size == 0) return;
  if (spec.wide) {
    *static_cast<wchar_t*>(target) = L'\0';
  } else {
    *static_cast<char*>(target) = '\0';
  }
}

}  // namespace
}  // namespace vigil::securec

namespace sec = vigil::securec;

extern "C" {

int vsscanf_s(const char* buffer, const char* format, va_list argList) {
  if (buffer == nullptr || format == nullptr) return -1;
  va_list args;
  va_copy(args, argList);
  const size_t length = strlen(buffer);
  int result;
  if (length == 0 || length > SECUREC_STRING_MAX_LEN) {
    sec::ClearFirstBuffer(format, &args);
    result = -1;
  } else {
    sec::Scanner scanner(buffer, length, &args);
    result = scanner.Run(format);
  }
  va_end(args);
  return result < 0 ? -1 : result;
}

int sscanf_s(const char* buffer, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int result = vsscanf_s(buffer, format, args);
  va_end(args);
  return result;
}

}  // extern "C"
