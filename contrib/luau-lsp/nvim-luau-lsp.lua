-- Neovim (0.11+) configuration for luau-lsp on Second Life Luau scripts in an slfs mount.
-- Put in ~/.config/nvim/plugin/ or require it from init.lua. The definition and documentation
-- files are the viewer's own, kept current by slfs in MOUNT/.slfs/syntax/.
local mount = vim.fn.expand(vim.g.slfs_mount or "~/sl")
local syntax = mount .. "/.slfs/syntax/"

vim.lsp.config("luau_lsp", {
  cmd = {
    "luau-lsp", "lsp",
    "--definitions=" .. syntax .. "secondlife.d.luau",
    "--docs=" .. syntax .. "secondlife.docs.json",
  },
  filetypes = { "luau" },
  root_markers = { ".luaurc", ".git" },
  settings = {
    ["luau-lsp"] = {
      platform = { type = "standard" },
      sourcemap = { enabled = false },
    },
  },
})
vim.lsp.enable("luau_lsp")
vim.filetype.add({ extension = { luau = "luau" } })
