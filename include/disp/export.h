/*
 * disp/export.h - symbol visibility for the public API.
 *
 * Every public function is declared with DISP_API. The library is built with
 * hidden visibility, so anything without DISP_API stays internal; a ctest
 * (tests/check_exports.sh) fails when an exported symbol lacks the disp_ prefix.
 */
#ifndef DISP_EXPORT_H
#define DISP_EXPORT_H

#if defined(_WIN32) && defined(DISP_SHARED)
#  if defined(DISP_BUILDING)
#    define DISP_API __declspec(dllexport)
#  else
#    define DISP_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define DISP_API __attribute__((visibility("default")))
#else
#  define DISP_API
#endif

#if defined(__GNUC__)
#  define DISP_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#  define DISP_PRINTF(fmt, args)
#endif

#endif /* DISP_EXPORT_H */
