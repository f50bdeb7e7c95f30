" slfs: compile diagnostics of scripts in an slfs mount as vim/neovim quickfix entries.
"
" Install: copy to ~/.vim/plugin/slfs.vim (vim) or ~/.config/nvim/plugin/slfs.vim (neovim), or
" `source` it from your vimrc/init.vim. Set g:slfs_mount if the mount is not ~/sl.
"
" Every line of MOUNT/.slfs/diagnostics and of DIR/.slfs/F.diag is ABSPATH:ROW:COL: LEVEL: MESSAGE,
" which vim's default 'errorformat' (%f:%l:%c: %m) already reads, so plain
"     vim -q ~/sl/.slfs/diagnostics
"     :cfile ~/sl/.slfs/diagnostics
" work without this file. What it adds: after each :w of a .lsl or .luau file in the mount (the
" save, and so the compile, is done when :w returns) the quickfix list is refreshed from
" `slfs diag FILE` and opened when there are errors, closed when there are none.
"
" Commands:
"   :SlfsDiag        quickfix from `slfs diag` for the current file
"   :SlfsDiagAll     quickfix from every diagnostic of the mount (.slfs/diagnostics)

if exists('g:loaded_slfs')
  finish
endif
let g:loaded_slfs = 1

let g:slfs_mount = get(g:, 'slfs_mount', expand('~/sl'))
let g:slfs_cmd = get(g:, 'slfs_cmd', 'slfs')
" Set to 0 to keep the quickfix window closed after a save.
let g:slfs_open_quickfix = get(g:, 'slfs_open_quickfix', 1)

" One errorformat for both sources: ABSPATH:ROW:COL: LEVEL: MESSAGE (LEVEL error/warning/...).
let s:efm = '%f:%l:%c: %trror: %m,%f:%l:%c: %tarning: %m,%f:%l:%c: %m'

function! s:InMount(path) abort
  let l:mount = fnamemodify(g:slfs_mount, ':p')
  return stridx(fnamemodify(a:path, ':p'), l:mount) == 0
endfunction

function! s:Load(lines, title) abort
  call setqflist([], ' ', {'lines': a:lines, 'efm': s:efm, 'title': a:title})
  if g:slfs_open_quickfix
    if len(filter(getqflist(), 'v:val.valid')) > 0
      botright cwindow
    else
      cclose
    endif
  endif
endfunction

function! s:Diag(path) abort
  " `slfs diag` exits 1 when a diagnostic is an error; its output is what we want either way.
  let l:lines = systemlist(g:slfs_cmd . ' diag ' . shellescape(fnamemodify(a:path, ':p')))
  if v:shell_error > 1
    echohl WarningMsg | echom 'slfs diag: ' . join(l:lines, ' ') | echohl None
    return
  endif
  call s:Load(l:lines, 'slfs diag ' . fnamemodify(a:path, ':t'))
endfunction

function! s:DiagAll() abort
  let l:file = fnamemodify(g:slfs_mount, ':p') . '.slfs/diagnostics'
  call s:Load(filereadable(l:file) ? readfile(l:file) : [], 'slfs diagnostics')
endfunction

command! SlfsDiag call s:Diag(expand('%'))
command! SlfsDiagAll call s:DiagAll()

augroup slfs
  autocmd!
  autocmd BufWritePost *.lsl,*.luau if s:InMount(expand('<afile>')) | call s:Diag(expand('<afile>')) | endif
augroup END
